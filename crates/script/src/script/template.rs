//! Comparison templates in Rhai: a script defining `fn render(comparison)`
//! that returns tables, run with no host API at all (no files, no network,
//! no clock), under tight language limits and a wall-clock deadline.

use super::rhai_engine::ScriptLimits;
use super::rhai_engine::{base_engine, memory_limit_token, runtime_error, script_stack_bytes};
use super::ScriptError;
use crate::model::template::{check_tables, limits, MadeTable, TableError, TemplateInput};
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

/// Why a Rhai comparison template gave no tables; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum TemplateFailure {
    /// No thread to run it on.
    #[error("{file}: could not start the template's thread: {source}")]
    Thread {
        /// The template.
        file: String,
        /// The run's thread cap or the OS's reason.
        source: crate::gate::SpawnError,
    },
    /// Its thread panicked.
    #[error("{file}: the template's thread failed")]
    ThreadDied {
        /// The template.
        file: String,
    },
    /// The comparison could not be given to Rhai.
    #[error("{file}: {why}")]
    Input {
        /// The template.
        file: String,
        /// Rhai's reason.
        why: String,
    },
    /// It does not compile, or failed while running (with its place).
    #[error("{0}")]
    Script(ScriptError),
    /// It has no `fn render(comparison)`.
    #[error("{file}: a comparison template defines `fn render(comparison)`, returning its tables")]
    NoRender {
        /// The template.
        file: String,
    },
    /// `render` returned something other than tables.
    #[error("{file}: render returned {shape}")]
    Shape {
        /// The template.
        file: String,
        /// What was wrong with it.
        shape: ShapeError,
    },
    /// The tables break the tables' limits.
    #[error("{file}: {error}")]
    Tables {
        /// The template.
        file: String,
        /// The limit broken.
        error: TableError,
    },
}

/// What `render` returned instead of tables; tables and rows are counted
/// from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// Neither a table map nor an array.
    #[error("a {type_name}: it must return a table (a map with title, header, rows, notes) or an array of them")]
    NotTables {
        /// Rhai's name of what it returned.
        type_name: String,
    },
    /// An array item that is not a map.
    #[error("an array whose item {item} is a {type_name}, not a table map")]
    NotATable {
        /// The item.
        item: usize,
        /// Rhai's name of what it is.
        type_name: String,
    },
    /// A header, notes or row that is not an array.
    #[error("table {table}: {what} must be an array")]
    NotAnArray {
        /// The table.
        table: usize,
        /// `header`, `notes` or `row N`.
        what: String,
    },
    /// `rows` that is not an array.
    #[error("table {table}: rows must be an array of rows")]
    RowsNotAnArray {
        /// The table.
        table: usize,
    },
    /// A key a table does not have (made safe to print).
    #[error("table {table}: unknown key '{key}' (a table has title, header, rows, notes)")]
    UnknownKey {
        /// The table.
        table: usize,
        /// The key.
        key: String,
    },
}

/// Runs `source`'s `render` on `input`; the error says what stopped it,
/// naming `file:line:col` where there is a place.
pub fn render(
    file: &str,
    source: &str,
    input: &TemplateInput,
) -> Result<Vec<MadeTable>, TemplateFailure> {
    // Rhai walks nested values recursively: a thread with a stack as deep
    // as the limits allow, as for scenarios.
    std::thread::scope(|s| {
        crate::gate::thread("rhai-template")
            .stack_size(script_stack_bytes(&TEMPLATE_LIMITS))
            .spawn_scoped(s, move || render_here(file, source, input))
            .map_err(|source| TemplateFailure::Thread {
                file: file.to_string(),
                source,
            })?
            .join()
            .unwrap_or_else(|_| {
                Err(TemplateFailure::ThreadDied {
                    file: file.to_string(),
                })
            })
    })
}

fn render_here(
    file: &str,
    source: &str,
    input: &TemplateInput,
) -> Result<Vec<MadeTable>, TemplateFailure> {
    let input = rhai::serde::to_dynamic(input).map_err(|e| TemplateFailure::Input {
        file: file.to_string(),
        why: e.to_string(),
    })?;
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
        .map_err(|e| TemplateFailure::Script(runtime_error(file, source, *e)))?;
    let tables = tables(out).map_err(|shape| TemplateFailure::Shape {
        file: file.to_string(),
        shape,
    })?;
    check_tables(&tables).map_err(|error| TemplateFailure::Tables {
        file: file.to_string(),
        error,
    })?;
    Ok(tables)
}

/// Compiles a template and checks that it defines `render`: `plumb check`.
pub fn check(file: &str, source: &str) -> Result<(), TemplateFailure> {
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
) -> Result<rhai::AST, TemplateFailure> {
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
    .map_err(|e| TemplateFailure::Script(e.error))?;
    if !ast
        .iter_functions()
        .any(|f| f.name == "render" && f.params.len() == 1)
    {
        return Err(TemplateFailure::NoRender {
            file: file.to_string(),
        });
    }
    Ok(ast)
}

/// A table map, or an array of them, as tables.
fn tables(out: Dynamic) -> Result<Vec<MadeTable>, ShapeError> {
    if out.is_map() {
        return Ok(vec![table(1, out.cast::<Map>())?]);
    }
    let Some(list) = out.clone().try_cast::<Array>() else {
        return Err(ShapeError::NotTables {
            type_name: out.type_name().to_string(),
        });
    };
    list.into_iter()
        .enumerate()
        .map(|(i, t)| match t.clone().try_cast::<Map>() {
            Some(m) => table(i + 1, m),
            None => Err(ShapeError::NotATable {
                item: i + 1,
                type_name: t.type_name().to_string(),
            }),
        })
        .collect()
}

fn table(n: usize, map: Map) -> Result<MadeTable, ShapeError> {
    let mut t = MadeTable::default();
    let not_an_array = |what: String| ShapeError::NotAnArray { table: n, what };
    for (key, value) in map {
        match key.as_str() {
            "title" => t.title = text(value),
            "header" => t.header = texts(value).ok_or_else(|| not_an_array("header".into()))?,
            "notes" if value.is_string() => t.notes = vec![text(value)],
            "notes" => t.notes = texts(value).ok_or_else(|| not_an_array("notes".into()))?,
            "rows" => {
                let rows = value
                    .try_cast::<Array>()
                    .ok_or(ShapeError::RowsNotAnArray { table: n })?;
                t.rows = rows
                    .into_iter()
                    .enumerate()
                    .map(|(r, row)| {
                        texts(row).ok_or_else(|| not_an_array(format!("row {}", r + 1)))
                    })
                    .collect::<Result<_, _>>()?;
            }
            other => {
                return Err(ShapeError::UnknownKey {
                    table: n,
                    key: crate::terminal::clean_text(other).into_owned(),
                })
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

/// An array's items as cell texts; None when `v` is not an array.
fn texts(v: Dynamic) -> Option<Vec<String>> {
    let list = v.try_cast::<Array>()?;
    Some(list.into_iter().map(text).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_past_the_source_limit_is_refused_before_compiling() {
        let source = format!("fn render(c) {{ [] }}\n{}", "// padding\n".repeat(30_000));
        let e = check("t.rhai", &source).unwrap_err().to_string();
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
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("compiling the script ran past its deadline (rule: template time limit)"),
            "{e}"
        );
    }
}
