//! `cpu`, `mem`, `net` and `trace`: the primitives beyond files.

use super::*;

pub(super) fn cpu_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "cpu";
    let mut m = Module::new();
    native!(m, "run", h, |o: Map| -> Dynamic {
        to_map(&h.borrow_mut().cpu(&options("cpu::run", o)?).map_err(api)?)
    });
    native!(m, "start", h, |o: Map| -> Task<CpuResult> {
        h.borrow_mut()
            .start_cpu(&options("cpu::start", o)?)
            .map_err(api)
    });
    native!(m, "kernels", h, || -> Dynamic {
        to_map(&h.borrow().cpu_kernels())
    });
    m
}

pub(super) fn mem_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "mem";
    let mut m = Module::new();
    native!(m, "bandwidth", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .mem_bandwidth(&options("mem::bandwidth", o)?)
                .map_err(api)?,
        )
    });
    native!(m, "latency", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .mem_latency(&options("mem::latency", o)?)
                .map_err(api)?,
        )
    });
    m
}

pub(super) fn net_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "net";
    let mut m = Module::new();
    native!(m, "throughput", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .net_throughput(&options("net::throughput", o)?)
                .map_err(api)?,
        )
    });
    native!(m, "start_throughput", h, |o: Map| -> Task<Throughput> {
        h.borrow_mut()
            .start_throughput(&options("net::start_throughput", o)?)
            .map_err(api)
    });
    native!(m, "rtt", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .net_rtt(&options("net::rtt", o)?)
                .map_err(api)?,
        )
    });
    native!(m, "connect_time", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .net_connect_time(&options("net::connect_time", o)?)
                .map_err(api)?,
        )
    });
    native!(m, "wait_for_port", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .net_wait_for_port(&options("net::wait_for_port", o)?)
                .map_err(api)?,
        )
    });
    native!(m, "local_peer", h, || -> String {
        h.borrow_mut().local_peer().map_err(api)
    });
    m
}

pub(super) fn trace_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "trace";
    let mut m = Module::new();
    native!(m, "replay", h, |path: &str| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .trace_replay(path, &Default::default())
                .map_err(api)?,
        )
    });
    native!(m, "replay", h, |path: &str, o: Map| -> Dynamic {
        let o = options("trace::replay", o)?;
        to_map(&h.borrow_mut().trace_replay(path, &o).map_err(api)?)
    });
    m
}
