//! Which process listens on a port: /proc/net/{tcp,udp}{,6} give the socket's inode, the
//! /proc/PID/fd links ("socket:[INODE]") give its owners.

use std::collections::HashSet;

const LISTEN: &str = "0A";

/// Inodes of the sockets listening on `port`, from /proc/net/tcp or tcp6 text.
pub fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local = f.get(1)?;
            let state = f.get(3)?;
            let inode = f.get(9)?.parse::<u64>().ok()?;
            let (_, hex_port) = local.rsplit_once(':')?;
            let p = u16::from_str_radix(hex_port, 16).ok()?;
            (p == port && *state == LISTEN && inode != 0).then_some(inode)
        })
        .collect()
}

/// Every pid holding one of `inodes` open (a prefork master and all its workers do).
pub fn socket_owners(inodes: &[u64]) -> Vec<i32> {
    let wanted: HashSet<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let mut owners = Vec::new();
    for pid in super::procs::all_pids() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
        let holds = fds
            .flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .any(|target| wanted.contains(target.to_string_lossy().as_ref()));
        if holds {
            owners.push(pid);
        }
    }
    owners
}

/// A /proc/net/tcp{,6} address ("0100007F:1F90"): the IP's 32-bit words in host (little
/// endian) order, then the port.
pub fn parse_address(text: &str) -> Option<std::net::SocketAddr> {
    let (ip, port) = text.rsplit_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let words: Vec<u32> =
        (0..ip.len() / 8).map(|i| u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16).ok()).collect::<Option<_>>()?;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let ip = match bytes.len() {
        4 => std::net::IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?),
        16 => std::net::IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?),
        _ => return None,
    };
    Some(std::net::SocketAddr::new(ip, port))
}

/// A socket that takes traffic from the network: a listening TCP socket, or a UDP socket bound
/// to a port and not connected to a peer (UDP has no listen state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    pub addr: std::net::SocketAddr,
    pub udp: bool,
}

impl std::fmt::Display for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.addr, if self.udp { "UDP" } else { "TCP" })
    }
}

/// UDP's "unconnected" state in /proc/net/udp: a socket any sender may reach.
const UDP_UNCONNECTED: &str = "07";

/// Every socket `pids` hold that takes traffic (TCP and UDP, IPv4 and IPv6): what a server
/// really listens on, whatever its configuration says.
pub fn listeners(pids: &[i32]) -> Vec<Listener> {
    let held: HashSet<u64> = pids
        .iter()
        .filter_map(|pid| std::fs::read_dir(format!("/proc/{pid}/fd")).ok())
        .flat_map(|fds| fds.flatten().filter_map(|fd| std::fs::read_link(fd.path()).ok()))
        .filter_map(|t| t.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok())
        .collect();
    let mut out = Vec::new();
    let tables = [
        ("tcp", LISTEN, false),
        ("tcp6", LISTEN, false),
        ("udp", UDP_UNCONNECTED, true),
        ("udp6", UDP_UNCONNECTED, true),
    ];
    for (table, wanted, udp) in tables {
        let Ok(text) = std::fs::read_to_string(format!("/proc/net/{table}")) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else { continue };
            let taking = *state == wanted && inode.parse::<u64>().is_ok_and(|i| held.contains(&i));
            if let Some(addr) = parse_address(local).filter(|a| taking && a.port() != 0) {
                let l = Listener { addr, udp };
                if !out.contains(&l) {
                    out.push(l);
                }
            }
        }
    }
    out
}

/// The addresses on which `pids` hold listening TCP sockets.
pub fn listening_addresses(pids: &[i32]) -> Vec<std::net::SocketAddr> {
    listeners(pids).into_iter().filter(|l| !l.udp).map(|l| l.addr).collect()
}

/// The pids behind a listening port on this machine (IPv4 and IPv6).
pub fn pids_listening_on(port: u16) -> Vec<i32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            inodes.extend(listening_inodes(&text, port));
        }
    }
    if inodes.is_empty() { Vec::new() } else { socket_owners(&inodes) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_read_as_the_kernel_writes_them() {
        assert_eq!(parse_address("0100007F:1F90").unwrap().to_string(), "127.0.0.1:8080");
        assert_eq!(parse_address("00000000:0050").unwrap().to_string(), "0.0.0.0:80");
        assert_eq!(parse_address("00000000000000000000000001000000:0050").unwrap().to_string(), "[::1]:80");
        assert_eq!(parse_address("junk"), None);
    }

    #[test]
    fn a_listener_of_this_process_is_found() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        assert!(listening_addresses(&[std::process::id() as i32]).contains(&addr));
    }

    #[test]
    fn finds_listening_sockets_in_captured_tables() {
        let v4 = include_str!("fixtures/net_tcp");
        assert_eq!(listening_inodes(v4, 35985), vec![2766661]);
        assert_eq!(listening_inodes(v4, 18080), vec![9670]);
        assert_eq!(listening_inodes(v4, 1), Vec::<u64>::new());
        let v6 = include_str!("fixtures/net_tcp6");
        assert_eq!(listening_inodes(v6, 40391), vec![2766737]);
    }

    #[test]
    fn connections_on_the_port_are_not_listeners() {
        // Established (01) and TIME_WAIT (06) rows for a port do not count.
        let table = "  sl  local_address rem_address   st\n   0: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 555 1\n   1: 0100007F:1F90 0100007F:9C41 06 00000000:00000000 00:00000000 00000000     0        0 0 3\n";
        assert_eq!(listening_inodes(table, 8080), Vec::<u64>::new());
    }
}
