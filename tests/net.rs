//! Network primitives against real `plumb serve` processes: on loopback, and
//! against known link conditions in network namespaces (as root, with
//! iproute2, ethtool and python3; without root they fail unless
//! `PLUMB_TEST_SKIP_PRIVILEGED=1` skips them, saying so).

mod links;
mod loopback;
mod peer;
mod robustness;
