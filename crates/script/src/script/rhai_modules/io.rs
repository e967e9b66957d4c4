//! `io`: jobs in the foreground, in a group and in the background, and the
//! handle types of all background work.

use super::*;

pub(super) fn io_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "io";
    let mut m = Module::new();
    native!(m, "job", h, |opts: Map| -> Dynamic {
        let pairs = option_pairs(&opts)?;
        let result = h.borrow_mut().job(pairs).map_err(api)?;
        to_map(&result)
    });
    native!(m, "start", h, |opts: Map| -> JobHandle {
        let pairs = option_pairs(&opts)?;
        h.borrow_mut().start_job(pairs).map_err(api)
    });
    native!(m, "group", h, |jobs: Array| -> Array {
        group(&h, jobs, Map::new())
    });
    native!(m, "group", h, |jobs: Array, o: Map| -> Array {
        group(&h, jobs, o)
    });
    m
}

/// `io::group(jobs)` and `io::group(jobs, #{ group_reporting: true })`.
fn group(h: &Shared, jobs: Array, o: Map) -> R<Array> {
    let o: GroupOptions = options("io::group", o)?;
    let pairs = jobs
        .into_iter()
        .enumerate()
        .map(|(i, j)| match j.try_cast::<Map>() {
            Some(m) => option_pairs(&m),
            None => Err(err(format!(
                "io::group: job {} is not an options map",
                i + 1
            ))),
        })
        .collect::<R<Vec<_>>>()?;
    let results = h.borrow_mut().group(pairs, &o).map_err(api)?;
    results.iter().map(to_map).collect()
}

/// The handle types of background work: `Job` (`io::start`), `CopyTask`
/// (`fs::start_copy`), `CpuTask` (`cpu::start`) and `ThroughputTask`
/// (`net::start_throughput`), each with `name`, `done`, `progress`, `wait`
/// and `stop`.
pub(super) fn register_task_types(engine: &mut Engine, host: &Shared) {
    register_task_type::<JobResult>(engine, host, "Job", to_map, |p| to_map(&p));
    register_task_type::<Transfer>(
        engine,
        host,
        "CopyTask",
        |t| transfer_map(*t),
        |p| to_map(&p),
    );
    register_task_type::<CpuResult>(engine, host, "CpuTask", to_map, |p| {
        to_map(&CpuProgress::from(p))
    });
    register_task_type::<Throughput>(engine, host, "ThroughputTask", to_map, |p| to_map(&p));
}

fn register_task_type<T: Clone + Send + Sync + std::fmt::Debug + 'static>(
    engine: &mut Engine,
    host: &Shared,
    name: &str,
    result: fn(&T) -> R<Dynamic>,
    progress: fn(LiveProgress) -> R<Dynamic>,
) {
    engine.register_type_with_name::<Task<T>>(name);
    engine.register_fn("name", |j: &mut Task<T>| j.name());
    engine.register_fn("done", |j: &mut Task<T>| j.done());
    engine.register_fn("progress", move |j: &mut Task<T>| progress(j.progress()));
    let h = host.clone();
    engine.register_fn("wait", move |j: &mut Task<T>| -> R<Dynamic> {
        result(&j.wait(&mut h.borrow_mut()).map_err(api)?)
    });
    let h = host.clone();
    engine.register_fn("stop", move |j: &mut Task<T>| -> R<Dynamic> {
        result(&j.stop(&mut h.borrow_mut()).map_err(api)?)
    });
}
