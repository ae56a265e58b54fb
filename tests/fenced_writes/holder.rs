//! A lock holder in a process of its own: `redis-cli` reading commands from a pipe, one
//! reply line each, that the test can stop (`SIGSTOP`) and resume (`SIGCONT`). Killed and
//! reaped on drop.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

pub struct Holder {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Holder {
    pub fn start(port: u16) -> Holder {
        let mut child = Command::new("redis-cli")
            .args(["-p", &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn redis-cli");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        Holder {
            child,
            input,
            output,
        }
    }

    /// Writes one command line (arguments without spaces or quotes) to its input.
    pub fn send(&mut self, args: &[&str]) {
        let line = format!("{}\n", args.join(" "));
        self.input
            .write_all(line.as_bytes())
            .expect("write a command");
        self.input.flush().expect("flush");
    }

    /// Its next reply line (`redis-cli` follows an error with an empty line, which is
    /// skipped). It ends at the latest when the process does (a closed pipe).
    pub fn reply(&mut self) -> String {
        for _ in 0..4 {
            let mut line = String::new();
            let read = self.output.read_line(&mut line).expect("read a reply");
            assert!(read > 0, "redis-cli ended");
            if !line.trim().is_empty() {
                return line.trim().to_owned();
            }
        }
        panic!("redis-cli sent empty lines only")
    }

    pub fn stop(&self) {
        self.signal("STOP");
    }

    pub fn resume(&self) {
        self.signal("CONT");
    }

    fn signal(&self, name: &str) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(&pid)
            .status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -{name} {pid}");
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
