//! The command's process group, and what keeps it from outliving the lock.
//!
//! The command runs as the leader of a process group of its own, so every process it starts
//! (the children of `sh -c`, of `make`) can be signalled at once, as `flock(1)` protects all
//! descendants. `rlock` is the "child subreaper" of what the command starts: a process the
//! command leaves behind becomes `rlock`'s child when its parent ends, so `rlock` can wait for
//! the whole group to end ([`emptied`]) before it releases the lock. Three things stop the
//! group:
//!
//! - `rlock` itself, before the lock's lease may end or when it is lost (`supervise.rs`).
//! - The kernel, if `rlock` dies: the leader is started with a parent-death signal
//!   (`prctl(PR_SET_PDEATHSIG, SIGKILL)`).
//! - The group's guardian, if `rlock` dies: a parent-death signal reaches only the leader,
//!   so a small forked process waits on a pipe that only `rlock` writes to. When `rlock`
//!   ends without standing it down (it was killed), the read ends, and the guardian sends
//!   `SIGKILL` to the group at once: nothing renews the lock any more, and the guardian
//!   cannot tell how much of its lease is left. Forked from a threaded process, it only
//!   makes async-signal-safe calls.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::signal::unix::Signal;

/// How often the wait for an empty group looks again without news of a child: a process of
/// the group that is not `rlock`'s child (its parent still runs) ends without telling it.
const RECHECK: Duration = Duration::from_millis(100);

/// A running command, leader of its own process group, with its guardian.
pub struct Group {
    pub child: Child,
    pgid: libc::pid_t,
    guardian: Option<(libc::pid_t, OwnedFd)>,
}

impl Group {
    /// Starts `command` as the leader of a new process group that dies with `rlock`, whose
    /// orphans become `rlock`'s children.
    pub fn spawn(mut command: Command) -> io::Result<Group> {
        // SAFETY: prctl with these arguments only sets a flag of this process.
        if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        command.process_group(0);
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe calls (prctl, getppid, raise).
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // rlock may have died before the prctl: then nobody would send the signal.
                if libc::getppid() != parent {
                    libc::raise(libc::SIGKILL);
                }
                Ok(())
            });
        }
        let child = command.spawn()?;
        let pgid = child
            .id()
            .and_then(|id| libc::pid_t::try_from(id).ok())
            .ok_or_else(|| io::Error::other("the command has no process id"))?;
        let guardian = match guard(pgid) {
            Ok(guardian) => Some(guardian),
            Err(e) => {
                eprintln!("rlock: no guardian for the command's group ({e}); it may outlive rlock");
                None
            }
        };
        Ok(Group {
            child,
            pgid,
            guardian,
        })
    }

    /// Sends `signal` to every process of the group.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill has no memory preconditions; a negative pid names the group.
        if unsafe { libc::kill(-self.pgid, signal) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ESRCH) {
                eprintln!("rlock: cannot signal the command's group: {e}");
            }
        }
    }

    /// The group's id (the leader's pid).
    pub fn id(&self) -> libc::pid_t {
        self.pgid
    }

    /// Tells the guardian that `rlock` ends in order: it leaves the group alone.
    pub fn stand_down(&mut self) {
        let Some((pid, pipe)) = self.guardian.take() else {
            return;
        };
        let stop = [0u8];
        // SAFETY: writes one byte from a live buffer to a descriptor this process owns.
        unsafe {
            libc::write(
                std::os::fd::AsRawFd::as_raw_fd(&pipe),
                stop.as_ptr().cast(),
                1,
            );
        }
        drop(pipe);
        // SAFETY: reaps our own child; a null status pointer is allowed.
        unsafe {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
}

const DEV_NULL: &[u8] = b"/dev/null\0";

/// Resolves once no process of group `pgid` is left, reaping those that are `rlock`'s
/// children (the command's orphans). Call it only once the leader was reaped (it would take
/// the leader's exit status from its `Child`); `child` is the `SIGCHLD` signal.
pub async fn emptied(pgid: libc::pid_t, child: &mut Signal) {
    loop {
        if reap_and_check_empty(pgid) {
            return;
        }
        tokio::select! {
            _ = child.recv() => {}
            () = tokio::time::sleep(RECHECK) => {}
        }
    }
}

/// Reaps the ended children of group `pgid`; then true if the group has no process left.
fn reap_and_check_empty(pgid: libc::pid_t) -> bool {
    // SAFETY: waitpid with a null status pointer and WNOHANG only reaps ended children.
    while unsafe { libc::waitpid(-pgid, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
    // SAFETY: signal 0 only checks that the group has a process.
    if unsafe { libc::kill(-pgid, 0) } == 0 {
        return false;
    }
    io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Forks the guardian of group `pgid`; returns its pid and the pipe's writing end.
fn guard(pgid: libc::pid_t) -> io::Result<(libc::pid_t, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read_end, write_end] = fds;
    // SAFETY: the child only makes async-signal-safe calls, then _exit.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        // SAFETY: see `watch`.
        0 => unsafe { watch(read_end, pgid) },
        pid => {
            // SAFETY: the reading end belongs to the guardian now; the writing end is ours.
            unsafe { libc::close(read_end) };
            Ok((pid, unsafe { OwnedFd::from_raw_fd(write_end) }))
        }
    }
}

/// The guardian's life, in the forked child: async-signal-safe calls only.
///
/// # Safety
///
/// Call only in a freshly forked child of `rlock`.
unsafe fn watch(read_end: libc::c_int, pgid: libc::pid_t) -> ! {
    // SAFETY (whole body): every call here is async-signal-safe, on plain integers or on
    // memory prepared before the fork.
    unsafe {
        // Not ended or stopped by the terminal's signals to rlock's group; only by the pipe.
        let mut ignore: libc::sigaction = std::mem::zeroed();
        ignore.sa_sigaction = libc::SIG_IGN;
        let terminal = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];
        let others = [libc::SIGTSTP, libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM];
        for signal in terminal.into_iter().chain(others) {
            libc::sigaction(signal, &ignore, std::ptr::null_mut());
        }
        // Keep no copy of rlock's sockets or pipes open (nor the pipe's writing end).
        let null = libc::open(DEV_NULL.as_ptr().cast(), libc::O_RDWR);
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
        for fd in 3..1024 {
            if fd != read_end {
                libc::close(fd);
            }
        }
        let mut byte = 0u8;
        let read = loop {
            let n = libc::read(read_end, (&mut byte as *mut u8).cast(), 1);
            if n >= 0 || *libc::__errno_location() != libc::EINTR {
                break n;
            }
        };
        if read <= 0 {
            // rlock died without standing us down.
            libc::kill(-pgid, libc::SIGKILL);
        }
        libc::_exit(0)
    }
}
