//! Whether a peer is this machine: a loopback address, the unspecified
//! address (which connects to this host), or an address of one of its own
//! interfaces. A figure measured against such a peer is the kernel's
//! loopback path, not a network, and is marked so.

use std::net::IpAddr;

/// True when `ip` reaches this machine without leaving it.
pub fn is_this_machine(ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    ip.is_loopback() || ip.is_unspecified() || own_addresses().contains(&ip)
}

/// The addresses of this machine's interfaces (empty when the system does
/// not say).
fn own_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list we free below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut at = list;
    while !at.is_null() {
        // SAFETY: `at` is a node of the list getifaddrs returned, alive
        // until freeifaddrs; its address, when not null, is a sockaddr of
        // the family it names.
        unsafe {
            let a = (*at).ifa_addr;
            if !a.is_null() {
                match i32::from((*a).sa_family) {
                    libc::AF_INET => {
                        let sin = &*(a as *const libc::sockaddr_in);
                        out.push(IpAddr::from(
                            u32::from_be(sin.sin_addr.s_addr).to_be_bytes(),
                        ));
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*(a as *const libc::sockaddr_in6);
                        out.push(IpAddr::from(sin6.sin6_addr.s6_addr));
                    }
                    _ => {}
                }
            }
            at = (*at).ifa_next;
        }
    }
    // SAFETY: the list getifaddrs returned, freed once.
    unsafe { libc::freeifaddrs(list) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_own_addresses_are_this_machine_a_documentation_address_is_not() {
        assert!(is_this_machine("127.0.0.1".parse().unwrap()));
        assert!(is_this_machine("127.3.4.5".parse().unwrap()));
        assert!(is_this_machine("::1".parse().unwrap()));
        assert!(is_this_machine("::ffff:127.0.0.1".parse().unwrap()));
        assert!(is_this_machine("0.0.0.0".parse().unwrap()));
        for own in own_addresses() {
            assert!(is_this_machine(own), "{own}");
        }
        assert!(!is_this_machine("192.0.2.7".parse().unwrap()));
        assert!(!is_this_machine("2001:db8::7".parse().unwrap()));
    }
}
