//! `time`, `report` and `sys`: the clock, what a scenario reports, and the
//! machine.

use super::*;

pub(super) fn time_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "time";
    let mut m = Module::new();
    native!(m, "now", h, || -> f64 { Ok(h.borrow().now()) });
    native!(m, "sleep", h, |d: Dynamic| -> () {
        let secs = to_seconds("time::sleep", &d)?;
        h.borrow().sleep(secs).map_err(api)
    });
    m.set_native_fn("measure", |ctx: NativeCallContext, f: FnPtr| -> R<Map> {
        let t = std::time::Instant::now();
        let result: Dynamic = f.call_within_context(&ctx, ())?;
        let mut m = Map::new();
        m.insert("seconds".into(), t.elapsed().as_secs_f64().into());
        m.insert("result".into(), result);
        Ok(m)
    });
    m
}

/// A metric's value (a number) and its direction (`"higher"`/`"lower"`).
fn metric_args(name: &str, value: Dynamic, better: &str) -> R<(f64, Better)> {
    let v = value
        .as_float()
        .or_else(|_| value.as_int().map(|i| i as f64))
        .map_err(|_| {
            err(format!(
                "report::metric '{name}': the value must be a number"
            ))
        })?;
    let better = better
        .parse()
        .map_err(|e| err(format!("report::metric: {e}")))?;
    Ok((v, better))
}

/// The number given to `report::counter` or `report::gauge` (an integer or
/// a float).
fn series_value(call: &str, name: &str, value: Dynamic) -> R<f64> {
    value
        .as_float()
        .or_else(|_| value.as_int().map(|i| i as f64))
        .map_err(|_| err(format!("{call} '{name}': the value must be a number")))
}

/// The marks of `report::metric`'s fifth argument: the result map of the
/// measurement the figure came from (its `loopback` and `cached` flags),
/// or an array of mark names (`["loopback"]`).
fn metric_marks(name: &str, from: Dynamic) -> R<BTreeSet<Mark>> {
    let mut marks = BTreeSet::new();
    if let Some(map) = from.read_lock::<Map>() {
        for mark in [Mark::Loopback, Mark::Cached] {
            if map
                .get(mark.name())
                .is_some_and(|f| f.as_bool() == Ok(true))
            {
                marks.insert(mark);
            }
        }
        return Ok(marks);
    }
    let Some(names) = from.read_lock::<Array>() else {
        return Err(err(format!(
            "report::metric '{name}': the fifth argument is the measurement's result (a map) or an array of marks, not {}",
            from.type_name()
        )));
    };
    for n in names.iter() {
        let text = n
            .clone()
            .into_immutable_string()
            .map_err(|_| err(format!("report::metric '{name}': a mark must be a string")))?;
        marks.insert(
            text.parse()
                .map_err(|e| err(format!("report::metric '{name}': {e}")))?,
        );
    }
    Ok(marks)
}

pub(super) fn report_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "report";
    let mut m = Module::new();
    native!(m, "metric", h, |name: &str,
                             value: Dynamic,
                             unit: &str,
                             better: &str|
     -> () {
        let (v, better) = metric_args(name, value, better)?;
        h.borrow_mut()
            .metric(name, v, unit, better, BTreeSet::new())
            .map_err(api)
    });
    native!(m, "metric", h, |name: &str,
                             value: Dynamic,
                             unit: &str,
                             better: &str,
                             from: Dynamic|
     -> () {
        let (v, better) = metric_args(name, value, better)?;
        let marks = metric_marks(name, from)?;
        h.borrow_mut()
            .metric(name, v, unit, better, marks)
            .map_err(api)
    });
    native!(m, "table", h, |title: &str,
                            header: Array,
                            rows: Array|
     -> () {
        let header: Vec<String> = header.iter().map(|c| c.to_string()).collect();
        let rows = rows
            .into_iter()
            .map(|r| {
                r.into_typed_array::<Dynamic>()
                    .map(|cells| cells.iter().map(|c| c.to_string()).collect::<Vec<_>>())
                    .map_err(|_| {
                        err(format!(
                            "report::table '{title}': every row must be an array"
                        ))
                    })
            })
            .collect::<R<Vec<_>>>()?;
        h.borrow_mut().table(title, header, rows).map_err(api)
    });
    native!(m, "note", h, |text: &str| -> () {
        h.borrow_mut().note(text).map_err(api)
    });
    native!(m, "phase", h, |name: &str| -> () {
        h.borrow_mut().phase(name).map_err(api)
    });
    native!(m, "counter", h, |name: &str, amount: Dynamic| -> () {
        let v = series_value("report::counter", name, amount)?;
        h.borrow_mut().counter(name, v).map_err(api)
    });
    native!(m, "gauge", h, |name: &str, value: Dynamic| -> () {
        let v = series_value("report::gauge", name, value)?;
        h.borrow_mut().gauge(name, v).map_err(api)
    });
    native!(m, "series", h, |name: &str,
                             unit: &str,
                             points: Array|
     -> () {
        let points = series_points(name, points)?;
        h.borrow_mut().series(name, unit, points).map_err(api)
    });
    m
}

/// `[[x, y], …]` (integers or floats) as points; the count is bounded
/// before anything is converted.
fn series_points(name: &str, points: Array) -> R<Vec<(f64, f64)>> {
    Host::series_length(name, points.len()).map_err(api)?;
    let number = |v: &Dynamic| {
        v.as_float()
            .ok()
            .or_else(|| v.as_int().ok().map(|i| i as f64))
    };
    points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let pair = p.read_lock::<Array>().and_then(|a| match a.as_slice() {
                [x, y] => number(x).zip(number(y)),
                _ => None,
            });
            pair.ok_or_else(|| {
                err(format!(
                    "report::series '{name}': point {i} is not [x, y] with two numbers"
                ))
            })
        })
        .collect()
}

pub(super) fn sys_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "sys";
    let mut m = Module::new();
    native!(m, "cpu_time", h, || -> f64 { Ok(h.borrow().cpu_time()) });
    native!(m, "info", h, || -> Dynamic {
        to_map(&h.borrow().sys_info())
    });
    m
}
