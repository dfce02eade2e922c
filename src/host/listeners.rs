//! Who listens on a loopback port: the listening TCP sockets of `/proc/net/tcp` and `tcp6`
//! (every user can read them, with each socket's owner uid and inode), and the processes that
//! hold a socket (by the `socket:[inode]` links in `/proc/PID/fd`, readable for one's own
//! processes). A service's token is only sent to a listener its own processes hold.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// One listening TCP socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub addr: IpAddr,
    pub port: u16,
    /// The uid that owns the socket (who made it).
    pub uid: u32,
    pub inode: u64,
}

/// The `st` column's value for a listening socket (`TCP_LISTEN`).
const TCP_LISTEN: &str = "0A";

/// The listening sockets of one `/proc/net/tcp` (`v6`: `tcp6`) table; lines that do not parse
/// are skipped.
pub fn parse(text: &str, v6: bool) -> Vec<Listener> {
    text.lines()
        .skip(1)
        .filter_map(|line| parse_line(line, v6))
        .collect()
}

fn parse_line(line: &str, v6: bool) -> Option<Listener> {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 10 || fields[3] != TCP_LISTEN {
        return None;
    }
    let (addr, port) = fields[1].split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let addr = match v6 {
        false => IpAddr::V4(v4_of(addr)?),
        true => IpAddr::V6(v6_of(addr)?),
    };
    Some(Listener {
        addr,
        port,
        uid: fields[7].parse().ok()?,
        inode: fields[9].parse().ok()?,
    })
}

/// The kernel prints an address as 32-bit words in the machine's byte order.
fn word(hex: &str) -> Option<[u8; 4]> {
    let w = u32::from_str_radix(hex, 16).ok()?;
    Some(w.to_ne_bytes())
}

fn v4_of(hex: &str) -> Option<Ipv4Addr> {
    (hex.len() == 8).then_some(())?;
    Some(Ipv4Addr::from(word(hex)?))
}

fn v6_of(hex: &str) -> Option<Ipv6Addr> {
    (hex.len() == 32).then_some(())?;
    let mut bytes = [0u8; 16];
    for i in 0..4 {
        bytes[i * 4..i * 4 + 4].copy_from_slice(&word(&hex[i * 8..i * 8 + 8])?);
    }
    Some(Ipv6Addr::from(bytes))
}

/// Every listening TCP socket on this machine (IPv6 ones where the kernel has IPv6).
pub fn listening() -> std::io::Result<Vec<Listener>> {
    listening_in(Path::new("/proc"))
}

fn listening_in(proc: &Path) -> std::io::Result<Vec<Listener>> {
    let mut out = parse(&std::fs::read_to_string(proc.join("net/tcp"))?, false);
    if let Ok(text) = std::fs::read_to_string(proc.join("net/tcp6")) {
        out.extend(parse(&text, true));
    }
    Ok(out)
}

/// The listeners a connection to 127.0.0.1:`port` can reach: one bound to 127.0.0.1 itself, or
/// to every address (0.0.0.0, `::` unless it is IPv6-only, which the table does not say), or to
/// 127.0.0.1 mapped into IPv6.
pub fn reaching_loopback(listeners: &[Listener], port: u16) -> Vec<&Listener> {
    let mapped = Ipv4Addr::LOCALHOST.to_ipv6_mapped();
    listeners
        .iter()
        .filter(|l| l.port == port)
        .filter(|l| match l.addr {
            IpAddr::V4(a) => a == Ipv4Addr::LOCALHOST || a.is_unspecified(),
            IpAddr::V6(a) => a.is_unspecified() || a == mapped,
        })
        .collect()
}

/// The socket inodes the processes of process group `pgid` hold (those whose descriptors this
/// user may read: its own).
pub fn sockets_of_group(pgid: u32) -> HashSet<u64> {
    super::pids()
        .filter(|pid| super::ProcStat::read(*pid).is_some_and(|s| s.pgid == pgid))
        .flat_map(sockets_of)
        .collect()
}

/// The socket inodes process `pid` holds.
pub fn sockets_of(pid: u32) -> HashSet<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return HashSet::new();
    };
    fds.filter_map(Result::ok)
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let target = target.to_str()?;
            target
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as a Linux 6.1 kernel prints them (x86-64, little-endian).
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:22B8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 4242 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0000000000000000 100 0 0 10 0
   2: 0100007F:C350 0100007F:22B8 01 00000000:00000000 00:00000000 00000000  1000        0 999 1 0000000000000000 20 4 30 10 -1
   3: garbage
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:22B8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 5151 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 6161 1 0000000000000000 100 0 0 10 0
   2: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 7171 1 0000000000000000 100 0 0 10 0
";

    #[test]
    #[cfg(target_endian = "little")]
    fn listening_sockets_are_read_with_their_owner_and_inode_and_the_rest_skipped() {
        let v4 = parse(TCP, false);
        assert_eq!(
            v4,
            vec![
                Listener {
                    addr: "127.0.0.1".parse().unwrap(),
                    port: 8888,
                    uid: 1001,
                    inode: 4242
                },
                Listener {
                    addr: "0.0.0.0".parse().unwrap(),
                    port: 22,
                    uid: 0,
                    inode: 17
                },
            ]
        );
        let v6 = parse(TCP6, true);
        assert_eq!(v6.len(), 3);
        assert_eq!(v6[0].addr, "::".parse::<IpAddr>().unwrap());
        assert_eq!(v6[1].addr, "::ffff:127.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(v6[2].addr, "::1".parse::<IpAddr>().unwrap());
    }

    #[test]
    #[cfg(target_endian = "little")]
    fn a_connection_to_loopback_reaches_loopback_wildcard_and_mapped_listeners_only() {
        let mut all = parse(TCP, false);
        all.extend(parse(TCP6, true));
        let inodes = |port| {
            reaching_loopback(&all, port)
                .iter()
                .map(|l| l.inode)
                .collect::<Vec<_>>()
        };
        assert_eq!(inodes(8888), vec![4242, 5151]);
        assert_eq!(inodes(22), vec![17]);
        assert_eq!(inodes(8080), vec![6161]);
        // ::1 is not 127.0.0.1.
        assert_eq!(inodes(8081), Vec::<u64>::new());
    }

    #[test]
    fn this_process_listening_is_found_in_the_real_tables_with_its_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let all = listening().unwrap();
        let found = reaching_loopback(&all, port);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].uid, crate::private_files::current_uid());
        assert!(sockets_of(std::process::id()).contains(&found[0].inode));
        let pgid = crate::host::ProcStat::read(std::process::id())
            .unwrap()
            .pgid;
        assert!(sockets_of_group(pgid).contains(&found[0].inode));
    }
}
