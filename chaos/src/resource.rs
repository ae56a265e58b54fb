//! The fenced resource: a plain `redis-server` (no module) that every critical section
//! writes its begin and end to. A script stamps each write with the resource's own clock
//! and refuses a token lower than the highest it accepted for that key; the answer is
//! recorded in the history as a [`Write`].

use std::sync::Arc;

use crate::history::Write;
use crate::machine::{free_port, server_binary};
use crate::process::Proc;

/// KEYS[1] = the key's fence; ARGV = token, owner, fenced (1/0), enforce (1/0), read (1/0).
/// Returns {accepted, stamp µs, highest token before (-1: none), same owner (1/0)}.
/// A read (a read-write lock's reader) is checked against the fence but does not raise it:
/// readers share the lock, and only writes order its holders.
const WRITE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local token = tonumber(ARGV[1])
local max = tonumber(redis.call('HGET', KEYS[1], 'max') or '-1')
local holder = redis.call('HGET', KEYS[1], 'holder') or ''
local fenced = ARGV[3] == '1'
local ok = 1
if fenced and ARGV[4] == '1' and token < max then ok = 0 end
if fenced and ok == 1 and token > max and ARGV[5] ~= '1' then
  redis.call('HSET', KEYS[1], 'max', ARGV[1], 'holder', ARGV[2])
end
local same = 0
if holder == ARGV[2] then same = 1 end
return {ok, now, max, same}
";

/// The resource server and how it fences.
pub struct Resource {
    pub port: u16,
    /// False with the unsafe switch: lower tokens are accepted too.
    pub enforce: bool,
    script: redis::Script,
}

/// One write's arguments.
pub struct Stamp<'a> {
    pub key: &'a str,
    pub owner: &'a str,
    pub token: u64,
    pub fenced: bool,
}

impl Resource {
    /// Starts the resource server: its process (owned by the run, so that it is killed
    /// even when a worker outlives the run) and the workers' view of it.
    pub fn start(enforce: bool) -> (Proc, Arc<Resource>) {
        let port = free_port();
        let args = [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ];
        let proc = Proc::start("resource", &server_binary(), port, strings(&args));
        (proc, Resource::remote(port, enforce))
    }

    /// The workers' view of a resource server on `port`.
    pub fn remote(port: u16, enforce: bool) -> Arc<Resource> {
        Arc::new(Resource {
            port,
            enforce,
            script: redis::Script::new(WRITE),
        })
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn invocation(&self, s: &Stamp<'_>, read: bool) -> redis::ScriptInvocation<'_> {
        let mut call = self.script.key(format!("fence:{}", s.key));
        call.arg(s.token)
            .arg(s.owner)
            .arg(u8::from(s.fenced))
            .arg(u8::from(self.enforce))
            .arg(u8::from(read));
        call
    }

    /// Writes from an async worker; `None` if the resource did not answer.
    pub async fn write(
        &self,
        conn: &mut redis::aio::MultiplexedConnection,
        s: &Stamp<'_>,
    ) -> Option<Write> {
        let reply: Vec<i64> = self.invocation(s, false).invoke_async(conn).await.ok()?;
        to_write(&reply)
    }

    /// Writes from a thread.
    pub fn write_sync(&self, conn: &mut redis::Connection, s: &Stamp<'_>) -> Option<Write> {
        self.stamp_sync(conn, s, false)
    }

    /// A write from a thread, or with `read` a reader's check against the fence.
    pub fn stamp_sync(
        &self,
        conn: &mut redis::Connection,
        s: &Stamp<'_>,
        read: bool,
    ) -> Option<Write> {
        let reply: Vec<i64> = self.invocation(s, read).invoke(conn).ok()?;
        to_write(&reply)
    }
}

fn to_write(reply: &[i64]) -> Option<Write> {
    let [ok, stamp, max, same] = reply[..] else {
        return None;
    };
    Some(Write {
        stamp_us: stamp as u64,
        accepted: ok == 1,
        max_before: max,
        same_holder: same == 1,
    })
}

pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}
