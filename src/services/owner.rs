//! Whether what listens on a service's port is the service itself. The port is chosen free,
//! released, and taken by the program a second later; it is on the program's command line,
//! which every user can read in /proc. A neighbour who binds it first would otherwise be sent
//! the notebook's token and be trusted as ready. So before anything is sent, the listener that
//! a connection to 127.0.0.1:PORT reaches must be one the service's own processes hold (on this
//! machine), or Docker's (a container's published port, which Docker holds from the start).

use crate::host::listeners::{self, Listener};
use crate::host::ProcStat;
use crate::runs::Run;

/// Root's uid: Docker's port forwarder (docker-proxy) runs as root.
const ROOT: u32 = 0;

/// Who holds a service's port, when it is not the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotOwn {
    /// Another user's process listens there.
    Foreign { port: u16, uid: u32 },
    /// Nothing of the service listens there yet (starting, or the port went to someone else
    /// of this user).
    NotYet { port: u16 },
    /// The socket table could not be read.
    Unreadable { why: String },
}

impl std::fmt::Display for NotOwn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotOwn::Foreign { port, uid } => write!(
                f,
                "port {port} is held by another user's process ({}), not by this service: \
                 nothing is sent to it",
                user_of(*uid)
            ),
            NotOwn::NotYet { port } => write!(
                f,
                "nothing of this service listens on port {port} yet (still starting)"
            ),
            NotOwn::Unreadable { why } => write!(
                f,
                "who listens on its port cannot be checked ({why}), so nothing is sent to it"
            ),
        }
    }
}

impl NotOwn {
    /// Another user took the port: the service will not get it back by waiting.
    pub fn is_foreign(&self) -> bool {
        matches!(self, NotOwn::Foreign { .. })
    }
}

/// `uid N (name)`, or `uid N` where the password database has no name for it.
fn user_of(uid: u32) -> String {
    match crate::host::user_name_of(uid) {
        Some(name) => format!("user {name}, uid {uid}"),
        None => format!("uid {uid}"),
    }
}

/// Checks every port of `run`'s service: `Ok` when each is its own to talk to.
pub fn check(run: &Run) -> Result<(), NotOwn> {
    let Some(service) = &run.record.service else {
        return Ok(());
    };
    let all = listeners::listening().map_err(|e| NotOwn::Unreadable {
        why: format!("/proc/net/tcp: {e}"),
    })?;
    let in_container = run.record.image.is_some();
    let group = (!in_container).then(|| process_group(run)).flatten();
    for p in &service.ports {
        check_port(
            &listeners::reaching_loopback(&all, p.port),
            p.port,
            crate::private_files::current_uid(),
            match (in_container, group) {
                (true, _) => Holder::Docker,
                (false, Some(pgid)) => Holder::Group(listeners::sockets_of_group(pgid)),
                (false, None) => Holder::Group(Default::default()),
            },
        )?;
    }
    Ok(())
}

/// Who should hold the port.
#[derive(Debug)]
pub enum Holder {
    /// Docker publishes a container's port: its forwarder (root, or this user's rootless
    /// engine) holds it, or nobody where the engine forwards in the kernel alone.
    Docker,
    /// The service runs on this machine: one of these sockets (its process group's).
    Group(std::collections::HashSet<u64>),
}

/// The rule, on the listeners a connection to 127.0.0.1:`port` can reach: no other user's, and
/// on this machine one of the service's own.
pub fn check_port(
    reaching: &[&Listener],
    port: u16,
    me: u32,
    holder: Holder,
) -> Result<(), NotOwn> {
    if let Some(l) = reaching
        .iter()
        .find(|l| l.uid != me && !(matches!(holder, Holder::Docker) && l.uid == ROOT))
    {
        return Err(NotOwn::Foreign { port, uid: l.uid });
    }
    match holder {
        Holder::Docker => Ok(()),
        Holder::Group(sockets) => match reaching.iter().any(|l| sockets.contains(&l.inode)) {
            true => Ok(()),
            false => Err(NotOwn::NotYet { port }),
        },
    }
}

/// The process group of a service's processes: the record's, else rank 0's.
fn process_group(run: &Run) -> Option<u32> {
    if let Some(group) = &run.record.process_group {
        return Some(group.pid);
    }
    let pid = run.record.ranks.first()?.pid?;
    ProcStat::read(pid).map(|s| s.pgid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listener(uid: u32, inode: u64) -> Listener {
        Listener {
            addr: "127.0.0.1".parse().unwrap(),
            port: 8888,
            uid,
            inode,
        }
    }

    fn group(inodes: &[u64]) -> Holder {
        Holder::Group(inodes.iter().copied().collect())
    }

    #[test]
    fn a_host_service_is_talked_to_only_through_a_socket_of_its_own_group() {
        let own = listener(1000, 7);
        assert_eq!(check_port(&[&own], 8888, 1000, group(&[7])), Ok(()));
        // Nothing listening yet, or a socket of this user outside the service: not yet.
        assert_eq!(
            check_port(&[], 8888, 1000, group(&[7])),
            Err(NotOwn::NotYet { port: 8888 })
        );
        assert_eq!(
            check_port(&[&listener(1000, 9)], 8888, 1000, group(&[7])),
            Err(NotOwn::NotYet { port: 8888 })
        );
    }

    #[test]
    fn another_users_listener_is_foreign_even_beside_the_services_own_and_even_root() {
        let neighbour = listener(1001, 8);
        assert_eq!(
            check_port(&[&neighbour], 8888, 1000, group(&[7])),
            Err(NotOwn::Foreign {
                port: 8888,
                uid: 1001
            })
        );
        let own = listener(1000, 7);
        assert!(check_port(&[&own, &neighbour], 8888, 1000, group(&[7]))
            .unwrap_err()
            .is_foreign());
        // On this machine, not even root's listener is the service's.
        assert!(check_port(&[&listener(0, 3)], 8888, 1000, group(&[7]))
            .unwrap_err()
            .is_foreign());
    }

    #[test]
    fn a_container_service_is_reached_through_dockers_forwarder_or_the_kernel() {
        assert_eq!(
            check_port(&[&listener(0, 3)], 8888, 1000, Holder::Docker),
            Ok(())
        );
        assert_eq!(check_port(&[], 8888, 1000, Holder::Docker), Ok(()));
        assert_eq!(
            check_port(&[&listener(1000, 3)], 8888, 1000, Holder::Docker),
            Ok(())
        );
        assert!(
            check_port(&[&listener(1001, 3)], 8888, 1000, Holder::Docker)
                .unwrap_err()
                .is_foreign()
        );
    }

    #[test]
    fn the_reason_names_the_port_and_the_user() {
        let text = NotOwn::Foreign { port: 8888, uid: 0 }.to_string();
        assert!(
            text.starts_with("port 8888 is held by another user's process (user root, uid 0)"),
            "{text}"
        );
    }
}
