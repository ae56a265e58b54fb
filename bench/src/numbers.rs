//! How the report writes a figure and a ratio.

pub fn num(v: f64) -> String {
    if v.is_infinite() {
        "∞".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

pub fn ratio(rlock: f64, lua: f64) -> String {
    if lua > 0.0 && rlock >= 0.0 && rlock.is_finite() {
        format!("×{:.2}", rlock / lua)
    } else {
        "—".into()
    }
}
