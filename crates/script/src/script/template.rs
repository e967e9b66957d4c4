//! Comparison templates in Rhai: a script defining `fn render(comparison)`
//! that returns tables, run with no host API at all (no files, no network,
//! no clock), under tight language limits and a wall-clock deadline.

use super::rhai_engine::ScriptLimits;
use super::rhai_engine::{base_engine, memory_limit_token, runtime_error, script_stack_bytes};
use crate::model::template::{check_tables, limits, MadeTable, TemplateInput};
use crate::units::format_value;
use rhai::{Array, Dynamic, Map, Scope};
use std::time::Instant;

/// The language limits of a template: much tighter than a scenario's.
pub const TEMPLATE_LIMITS: ScriptLimits = ScriptLimits {
    max_operations: 200_000_000,
    max_call_levels: 32,
    max_string_size: 64 << 10,
    max_array_size: 100_000,
    max_map_size: 10_000,
    max_heap_bytes: 128 << 20,
};

/// Runs `source`'s `render` on `input`; the error says what stopped it,
/// naming `file:line:col` where there is a place.
pub fn render(file: &str, source: &str, input: &TemplateInput) -> Result<Vec<MadeTable>, String> {
    // Rhai walks nested values recursively: a thread with a stack as deep
    // as the limits allow, as for scenarios.
    std::thread::scope(|s| {
        crate::gate::thread("rhai-template")
            .stack_size(script_stack_bytes(&TEMPLATE_LIMITS))
            .spawn_scoped(s, move || render_here(file, source, input))
            .map_err(|e| format!("{file}: could not start the template's thread: {e}"))?
            .join()
            .unwrap_or_else(|_| Err(format!("{file}: the template's thread failed")))
    })
}

fn render_here(file: &str, source: &str, input: &TemplateInput) -> Result<Vec<MadeTable>, String> {
    let input = rhai::serde::to_dynamic(input).map_err(|e| format!("{file}: {e}"))?;
    let mut engine = base_engine(&TEMPLATE_LIMITS);
    let started = Instant::now();
    let heap = crate::heap::HeapWatch::start(TEMPLATE_LIMITS.max_heap_bytes);
    engine.on_progress(move |ops| {
        if ops % 64 == 0 && heap.over() {
            return Some(memory_limit_token(
                TEMPLATE_LIMITS.max_heap_bytes,
                "template memory limit",
            ));
        }
        (ops % 1024 == 0 && started.elapsed() > limits::TIME).then(|| {
            Dynamic::from(format!(
                "the template ran longer than {} s (rule: template time limit)",
                limits::TIME.as_secs()
            ))
        })
    });
    engine.register_fn("format_value", |v: f64, unit: &str| format_value(v, unit));
    engine.register_fn("format_value", |v: i64, unit: &str| {
        format_value(v as f64, unit)
    });
    let ast = compile(&mut engine, file, source, started)?;
    let out: Dynamic = engine
        .call_fn(&mut Scope::new(), &ast, "render", (input,))
        .map_err(|e| runtime_error(file, source, *e).to_string())?;
    let tables = tables(out).map_err(|e| format!("{file}: render returned {e}"))?;
    check_tables(&tables).map_err(|e| format!("{file}: {e}"))?;
    Ok(tables)
}

/// Compiles a template and checks that it defines `render`: `plumb check`.
pub fn check(file: &str, source: &str) -> Result<(), String> {
    compile(
        &mut base_engine(&TEMPLATE_LIMITS),
        file,
        source,
        Instant::now(),
    )
    .map(|_| ())
}

/// Compiles a template started at `started` under the template limits
/// (its memory, and its time from then on), and checks that it defines
/// `render`.
fn compile(
    engine: &mut rhai::Engine,
    file: &str,
    source: &str,
    started: Instant,
) -> Result<rhai::AST, String> {
    let deadline = started
        .checked_add(limits::TIME)
        .map(|at| (at, "template time limit"));
    let ast = super::rhai_engine::compile(
        engine,
        file,
        source,
        &TEMPLATE_LIMITS,
        "template memory limit",
        deadline,
    )
    .map_err(|e| e.error.to_string())?;
    if !ast
        .iter_functions()
        .any(|f| f.name == "render" && f.params.len() == 1)
    {
        return Err(format!(
            "{file}: a comparison template defines `fn render(comparison)`, returning its tables"
        ));
    }
    Ok(ast)
}

/// A table map, or an array of them, as tables.
fn tables(out: Dynamic) -> Result<Vec<MadeTable>, String> {
    if out.is_map() {
        return Ok(vec![table(1, out.cast::<Map>())?]);
    }
    let Some(list) = out.clone().try_cast::<Array>() else {
        return Err(format!(
            "a {}: it must return a table (a map with title, header, rows, notes) or an array of them",
            out.type_name()
        ));
    };
    list.into_iter()
        .enumerate()
        .map(|(i, t)| match t.clone().try_cast::<Map>() {
            Some(m) => table(i + 1, m),
            None => Err(format!(
                "an array whose item {} is a {}, not a table map",
                i + 1,
                t.type_name()
            )),
        })
        .collect()
}

fn table(n: usize, map: Map) -> Result<MadeTable, String> {
    let mut t = MadeTable::default();
    for (key, value) in map {
        let at = |what: &str| format!("table {n}: {what}");
        match key.as_str() {
            "title" => t.title = text(value),
            "header" => t.header = texts(value).map_err(|e| at(&format!("header {e}")))?,
            "notes" if value.is_string() => t.notes = vec![text(value)],
            "notes" => t.notes = texts(value).map_err(|e| at(&format!("notes {e}")))?,
            "rows" => {
                let rows = value
                    .try_cast::<Array>()
                    .ok_or_else(|| at("rows must be an array of rows"))?;
                t.rows = rows
                    .into_iter()
                    .enumerate()
                    .map(|(r, row)| texts(row).map_err(|e| at(&format!("row {} {e}", r + 1))))
                    .collect::<Result<_, _>>()?;
            }
            other => {
                return Err(at(&format!(
                    "unknown key '{}' (a table has title, header, rows, notes)",
                    crate::terminal::clean_text(other)
                )))
            }
        }
    }
    Ok(t)
}

/// A cell's text: strings as they are, `()` empty, numbers and the rest
/// as Rhai prints them.
fn text(v: Dynamic) -> String {
    if v.is_unit() {
        return String::new();
    }
    if v.is_string() {
        return v
            .into_immutable_string()
            .map(|s| s.to_string())
            .unwrap_or_default();
    }
    v.to_string()
}

fn texts(v: Dynamic) -> Result<Vec<String>, String> {
    let list = v
        .try_cast::<Array>()
        .ok_or_else(|| "must be an array".to_string())?;
    Ok(list.into_iter().map(text).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_past_the_source_limit_is_refused_before_compiling() {
        let source = format!("fn render(c) {{ [] }}\n{}", "// padding\n".repeat(30_000));
        let e = check("t.rhai", &source).unwrap_err();
        assert!(e.contains("rule: script size limit"), "{e}");
    }

    #[test]
    fn compiling_a_template_is_held_to_its_time_limit() {
        // Started long enough ago that its time is up before it compiles.
        let started = Instant::now() - limits::TIME;
        let source = "let a = [1, 2, 3];\n".repeat(100);
        let e = compile(
            &mut base_engine(&TEMPLATE_LIMITS),
            "t.rhai",
            &source,
            started,
        )
        .unwrap_err();
        assert!(
            e.contains("compiling the script ran past its deadline (rule: template time limit)"),
            "{e}"
        );
    }
}
