//! How an error line echoes what a client sent: printable, and clipped.

/// The most bytes of a client's argument an error line echoes.
pub const MAX_ECHO: usize = 128;

/// The part of `bytes` an error may echo: the first [`MAX_ECHO`] bytes, and one more to
/// tell that there were more (so an error never copies a whole big argument).
pub fn clip(bytes: &[u8]) -> Vec<u8> {
    bytes[..bytes.len().min(MAX_ECHO + 1)].to_vec()
}

/// Renders bytes for an error line: printable ASCII as is, every other byte (and `\`)
/// as a `\xHH` escape, so the result never holds CR, LF or NUL; past [`MAX_ECHO`] bytes,
/// `...` stands for the rest.
pub fn printable(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(MAX_ECHO)];
    let mut out = String::with_capacity(shown.len() + 3);
    push_printable(&mut out, shown);
    if shown.len() < bytes.len() {
        out.push_str("...");
    }
    out
}

fn push_printable(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
}
