//! Client-crate workers in child processes (this binary, re-executed as `rlock-chaos
//! worker ...`), so that a whole holder process can be paused past its lease or killed.
//! A child prints its events as lines; the parent reads them into the history. A child
//! stops when its stdin closes.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rlock_client::Client;

use super::Ctx;
use crate::history::{from_line, History};
use crate::machine::signal;
use crate::resource::Resource;
use crate::rng::Rng;

/// A child worker process, seen from the parent.
pub struct ChildWorker {
    pub name: String,
    args: Vec<String>,
    child: Option<Child>,
    history: History,
}

impl ChildWorker {
    /// `url`: the lock server's; the child writes to the resource on `resource` port.
    pub fn spawn(
        name: &str,
        url: &str,
        resource: &Resource,
        keys: &[String],
        seed: u64,
        ignore: bool,
        history: &History,
    ) -> ChildWorker {
        let args = vec![
            "worker".to_owned(),
            url.to_owned(),
            resource.port.to_string(),
            u8::from(resource.enforce).to_string(),
            keys.join(","),
            seed.to_string(),
            u8::from(ignore).to_string(),
            name.to_owned(),
        ];
        let mut worker = ChildWorker {
            name: name.to_owned(),
            args,
            child: None,
            history: history.clone(),
        };
        worker.start();
        worker
    }

    fn start(&mut self) {
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current exe: {e}"));
        let mut child = Command::new(exe)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start a child worker: {e}"));
        if let Some(out) = child.stdout.take() {
            let history = self.history.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if let Some(event) = from_line(&line) {
                        history.push(event);
                    }
                }
            });
        }
        self.child = Some(child);
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// kill -9 and start again.
    pub fn kill_and_restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.start();
    }

    /// Asks the child to stop (closes its stdin) and waits for it, at most `within`.
    pub fn finish(&mut self, within: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        signal("CONT", child.id());
        drop(child.stdin.take());
        let until = std::time::Instant::now() + within;
        while std::time::Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for ChildWorker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The child's side: `worker <url> <resource port> <enforce> <keys> <seed> <ignore> <name>`.
pub fn main(args: &[String]) -> Result<(), String> {
    let [url, port, enforce, keys, seed, ignore, name] = args else {
        return Err("worker <url> <resource port> <enforce> <keys> <seed> <ignore> <name>".into());
    };
    let ctx = Arc::new(Ctx {
        history: History::printing(),
        resource: Resource::remote(port.parse().map_err(|_| "bad port")?, enforce == "1"),
        rng: Rng::new(seed.parse().map_err(|_| "bad seed")?),
        stop: Default::default(),
        keys: keys.split(',').map(str::to_owned).collect(),
        ignore_loss: ignore == "1",
    });
    let stopper = ctx.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        stopper.stop.store(true, Ordering::Relaxed);
    });
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(serve(ctx, url.clone(), name.clone()));
    Ok(())
}

async fn serve(ctx: Arc<Ctx>, url: String, name: String) {
    let options = super::client_options(ctx.ignore_loss);
    let client = loop {
        if ctx.stopped() {
            return;
        }
        match Client::open_with(&url, options).await {
            Ok(client) => break client,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    let tasks: Vec<_> = (0..2)
        .map(|i| {
            tokio::spawn(super::client::run(
                ctx.clone(),
                client.clone(),
                format!("{name}.{i}"),
            ))
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
    let _ = client.close().await;
}
