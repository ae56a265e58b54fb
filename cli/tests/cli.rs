//! The `rlock` command-line tool, run as a process against a real server.

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{poll, Server};
use tool::{finish, rlock, text};

/// How long `rlock` may take to take or show a lock.
const HELD_WITHIN: Duration = Duration::from_secs(10);

fn run(server: &Server, args: &[&str]) -> Output {
    rlock(server, args).output().expect("run rlock")
}

#[test]
fn run_holds_the_lock_while_the_command_runs_and_gives_it_the_token() {
    let server = Server::start();
    let script = "echo \"$RLOCK_KEY $RLOCK_OWNER $RLOCK_TOKEN\"; sleep 1";
    let child = rlock(&server, &["run", "job", "--", "sh", "-c", script])
        .spawn()
        .expect("spawn rlock");
    assert!(
        poll(HELD_WITHIN, || server.info("job").is_some()),
        "never held"
    );
    let info = server.info("job").unwrap();
    assert_eq!(info.holds, 1);
    assert!(info.ttl > 20_000, "watchdog lease expected: {info:?}");
    let out = finish(child);
    assert!(out.status.success(), "{out:?}");
    let expected = format!("job {} {}\n", info.owner, info.token);
    assert_eq!(text(&out.stdout), expected);
    assert_eq!(server.info("job"), None, "released when the command exited");
}

#[test]
fn the_command_exit_status_comes_through_and_the_lock_is_released() {
    let server = Server::start();
    let out = run(&server, &["run", "job", "--", "sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert_eq!(server.info("job"), None);
    let out = run(&server, &["run", "job", "--", "no-such-command-rlock-test"]);
    assert_eq!(out.status.code(), Some(127), "{out:?}");
    assert!(text(&out.stderr).contains("cannot run no-such-command-rlock-test"));
    assert_eq!(server.info("job"), None);
}

#[test]
fn a_wait_that_runs_out_exits_75_naming_the_holder() {
    let server = Server::start();
    server.hold("job", "backup-host:42", &[]);
    let started = Instant::now();
    let args = ["run", "job", "--wait", "300ms", "--", "echo", "ran"];
    let out = run(&server, &args);
    assert_eq!(out.status.code(), Some(75), "{out:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("waiting for 'job'") && stderr.contains("held by backup-host:42"),
        "{stderr}"
    );
    assert!(stderr.contains("gave up waiting for 'job'"), "{stderr}");
    assert_eq!(text(&out.stdout), "", "the command must not run");
    assert_eq!(server.info("job").unwrap().owner, "backup-host:42");
}

#[test]
fn a_waiting_run_starts_when_the_lock_is_released() {
    let server = Server::start();
    server.hold("job", "first", &[]);
    let args = [
        "run",
        "job",
        "--wait",
        "10s",
        "--",
        "sh",
        "-c",
        "echo $RLOCK_TOKEN",
    ];
    let child = rlock(&server, &args).spawn().expect("spawn rlock");
    assert!(poll(HELD_WITHIN, || server.info("job").unwrap().waiters == 1));
    server.cmd::<u64>(&["LOCK.RELEASE", "job", "first"]);
    let out = finish(child);
    assert!(out.status.success(), "{out:?}");
    let token: u64 = text(&out.stdout).trim().parse().expect("a token");
    assert!(token > 0);
    assert!(text(&out.stderr).contains(&format!("acquired 'job' (token {token})")));
    assert_eq!(server.info("job"), None);
}

#[test]
fn a_lost_lock_kills_the_command_and_exits_76() {
    let server = Server::start();
    let started = Instant::now();
    let out = run(
        &server,
        &["run", "job", "--lease", "300ms", "--", "sleep", "10"],
    );
    assert_eq!(out.status.code(), Some(76), "{out:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "not killed in time"
    );
    // A fixed lease ends: the command gets SIGTERM before it may end.
    let stderr = text(&out.stderr);
    assert!(stderr.contains("lease may end in"), "{stderr}");
    assert!(stderr.contains("stopping sleep"), "{stderr}");
}

#[test]
fn info_shows_the_holder_and_release_needs_force() {
    let server = Server::start();
    let out = run(&server, &["info", "job"]);
    assert_eq!(out.status.code(), Some(1), "free: {out:?}");
    assert_eq!(text(&out.stdout), "job: free\n");
    let token: u64 = server.cmd(&["LOCK.ACQUIRE", "job", "someone"]);
    let out = run(&server, &["info", "job"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("owner: someone\n"), "{stdout}");
    assert!(stdout.contains(&format!("token: {token}\n")), "{stdout}");
    assert!(stdout.contains("holds: 1\n"), "{stdout}");
    let out = run(&server, &["release", "job"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("--force"));
    assert!(server.info("job").is_some(), "released without --force");
    let out = run(&server, &["release", "job", "--force"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "job: released\n");
    assert_eq!(server.info("job"), None);
    let out = run(&server, &["release", "job", "--force"]);
    assert_eq!(text(&out.stdout), "job: was free\n");
}

#[test]
fn the_url_comes_from_the_environment_too() {
    let server = Server::start();
    let out = Command::new(env!("CARGO_BIN_EXE_rlock"))
        .env("RLOCK_URL", server.url())
        // Room for a loaded machine: the default (2 s) once ran out while connecting.
        .args(["--timeout", "10s", "info", "job"])
        .output()
        .expect("run rlock");
    assert_eq!(text(&out.stdout), "job: free\n", "{out:?}");
}

#[test]
fn sigterm_reaches_the_command_and_the_lock_is_released() {
    let server = Server::start();
    let script = "echo started; exec sleep 10";
    let mut child = rlock(&server, &["run", "job", "--", "sh", "-c", script])
        .spawn()
        .expect("spawn rlock");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .expect("read the command's output");
    assert_eq!(line, "started\n");
    assert!(
        server.info("job").is_some(),
        "not held while the command runs"
    );
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(killed.expect("run kill").success());
    let out = finish(child);
    assert_eq!(out.status.code(), Some(128 + 15), "{out:?}");
    assert_eq!(server.info("job"), None, "released after the command ended");
}

#[test]
fn run_over_three_servers_holds_a_redlock_and_a_minority_may_be_down() {
    let mut servers = [Server::start(), Server::start(), Server::start()];
    let redlock = |servers: &[Server]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlock"));
        cmd.env_remove("RLOCK_URL").args(["--timeout", "500ms"]);
        for server in servers {
            cmd.arg("--url").arg(server.url());
        }
        let script = "echo \"$RLOCK_OWNER $RLOCK_TOKEN\"; sleep 1";
        cmd.args(["run", "job", "--", "sh", "-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    };
    let child = redlock(&servers).spawn().expect("spawn rlock");
    let on_all = || servers.iter().all(|s| s.info("job").is_some());
    assert!(poll(HELD_WITHIN, on_all), "not held on every server");
    let owner = servers[0].info("job").unwrap().owner;
    assert!(servers
        .iter()
        .all(|s| s.info("job").unwrap().owner == owner));
    let out = finish(child);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    let (printed_owner, token) = printed.trim().split_once(' ').expect("owner and token");
    assert_eq!(printed_owner, owner);
    let token: u64 = token.parse().expect("a token");
    assert!(servers.iter().all(|s| s.info("job").is_none()), "released");

    servers[1].kill();
    let out = redlock(&servers).output().expect("run rlock");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (_, later) = text(&out.stdout)
        .trim()
        .split_once(' ')
        .map(|(o, t)| (o.to_owned(), t.to_owned()))
        .unwrap();
    assert!(later.parse::<u64>().unwrap() > token);
}

#[test]
fn run_over_two_servers_is_refused() {
    let servers = [Server::start(), Server::start()];
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlock"));
    cmd.env_remove("RLOCK_URL");
    for server in &servers {
        cmd.arg("--url").arg(server.url());
    }
    let out = cmd
        .args(["run", "job", "--", "true"])
        .output()
        .expect("run rlock");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("at least 3 servers"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn run_over_three_servers_with_two_dead_fails_at_once() {
    let mut servers = [Server::start(), Server::start(), Server::start()];
    servers[0].kill();
    servers[2].kill();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlock"));
    cmd.env_remove("RLOCK_URL").args(["--timeout", "500ms"]);
    for server in &servers {
        cmd.arg("--url").arg(server.url());
    }
    let mut child = cmd
        .args(["run", "job", "--", "echo", "ran"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rlock");
    let ended = poll(Duration::from_secs(10), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !ended {
        let _ = child.kill();
    }
    let out = finish(child);
    assert!(ended, "rlock waited on with 1 of 3 servers: {out:?}");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("only 1 of its servers answered, 2 are needed"),
        "{stderr}"
    );
    assert_eq!(text(&out.stdout), "", "the command must not run");
}
