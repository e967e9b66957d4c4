//! The Rhai engine for untrusted scenarios: a raw engine with only the
//! standard packages added, every limit set, a deadline checked while it runs,
//! and errors that name `file:line:col`.

use super::rhai_modules::{self, host_functions};
use super::ScriptError;
use crate::api::scenario_error::{ScenarioError, ScenarioErrorKind};
use crate::api::{ErrorKind, Host, ScenarioReport};
use crate::halt::Halted;
use rhai::packages::{Package, StandardPackage};
use rhai::{Engine, EvalAltResult, LexError, ParseError, Position, Token, AST};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

/// Longest script source, a scenario's or a comparison template's, in
/// bytes. Compiling costs time and memory in proportion to the source
/// (measured: about 70 bytes of heap per byte of source, and 0.5 s per
/// MiB in a release build); at this size it fits any sane limit, and the
/// limits are checked while compiling too ([`compile`]).
pub const MAX_SOURCE_BYTES: usize = 256 << 10;

/// Most functions a script may define, and most variables in scope at
/// once (Rhai's own parser limits).
const MAX_FUNCTIONS: usize = 1_000;
const MAX_VARIABLES: usize = 10_000;

/// Limits of the script language itself (the host API has its own).
#[derive(Debug, Clone, Copy)]
pub struct ScriptLimits {
    /// Most operations a scenario may run.
    pub max_operations: u64,
    /// Deepest function-call nesting.
    pub max_call_levels: usize,
    /// Longest string, in bytes.
    pub max_string_size: usize,
    /// Most array elements.
    pub max_array_size: usize,
    /// Most map entries.
    pub max_map_size: usize,
    /// Most heap bytes the script's values may hold (counted by
    /// [`crate::heap`]: Rhai's size limits miss some ways data grows).
    pub max_heap_bytes: usize,
}

impl Default for ScriptLimits {
    fn default() -> Self {
        ScriptLimits {
            max_operations: 2_000_000_000,
            max_call_levels: 48,
            max_string_size: 1 << 20,
            max_array_size: 1_000_000,
            max_map_size: 100_000,
            max_heap_bytes: 256 << 20,
        }
    }
}

pub(super) fn base_engine(limits: &ScriptLimits) -> Engine {
    let mut engine = Engine::new_raw();
    StandardPackage::new().register_into_engine(&mut engine);
    engine.set_max_operations(limits.max_operations);
    engine.set_max_call_levels(limits.max_call_levels);
    engine.set_max_expr_depths(64, 32);
    engine.set_max_string_size(limits.max_string_size);
    engine.set_max_array_size(limits.max_array_size);
    engine.set_max_map_size(limits.max_map_size);
    engine.set_max_modules(0);
    engine.set_max_functions(MAX_FUNCTIONS);
    engine.set_max_variables(MAX_VARIABLES);
    // A script's text never reaches the terminal raw: escape sequences
    // and other controls are shown escaped.
    // A script's print and debug go to plumb's log (target `plumb::script`).
    engine.on_print(
        |s| tracing::info!(target: "plumb::script", "  | {}", crate::terminal::clean_text(s)),
    );
    engine.on_debug(|s, _, pos| {
        tracing::info!(target: "plumb::script", "  | [{pos}] {}", crate::terminal::clean_text(s))
    });
    engine
}

pub(super) fn place(
    file: &str,
    source: &str,
    pos: Position,
    message: String,
    compile_time: bool,
) -> ScriptError {
    use crate::model::document::{cut_text, limits};
    let line = pos.line();
    // Both end up in the result file: within its limit together.
    ScriptError {
        file: file.to_string(),
        line,
        column: pos.position(),
        message: cut_text(&message, limits::TEXT / 2).into_owned(),
        source_line: line
            .and_then(|l| source.lines().nth(l - 1))
            .map(|s| cut_text(s, limits::TEXT / 8).into_owned()),
        compile_time,
    }
}

pub(super) fn parse_error(file: &str, source: &str, e: ParseError) -> ScriptError {
    let pos = e.position();
    place(
        file,
        source,
        pos,
        format!("syntax error: {}", e.err_type()),
        true,
    )
}

/// The limit that stopped a compilation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CompileLimit {
    /// The heap grew past the memory limit.
    Memory,
    /// The deadline passed.
    Deadline,
}

/// A compilation that failed: why, with the place, and the limit that
/// stopped it (none when the source itself is at fault).
#[derive(Debug)]
pub(super) struct CompileError {
    pub error: ScriptError,
    pub limit: Option<CompileLimit>,
}

impl CompileError {
    /// The error as a scenario ends with it.
    fn into_scenario_error(self) -> ScenarioError {
        let kind = match self.limit {
            None => ScenarioErrorKind::Script,
            Some(CompileLimit::Memory) => ScenarioErrorKind::MemoryLimit,
            Some(CompileLimit::Deadline) => ScenarioErrorKind::Deadline,
        };
        ScenarioError::new(kind, self.error.to_string())
    }
}

/// Compiles `source` with `engine` under the limits running has: a source
/// longer than [`MAX_SOURCE_BYTES`] is refused before parsing; Rhai's own
/// parser limits apply (expression depth, string length, functions,
/// variables); and every 64 tokens the heap this thread grew while
/// compiling is checked against `limits.max_heap_bytes` (named by `rule`)
/// and the time against `deadline` (the instant, and the rule that set it).
pub(super) fn compile(
    engine: &mut Engine,
    file: &str,
    source: &str,
    limits: &ScriptLimits,
    rule: &str,
    deadline: Option<(Instant, &str)>,
) -> Result<AST, CompileError> {
    if source.len() > MAX_SOURCE_BYTES {
        let message = format!(
            "the script is {} ({} bytes), more than the {} a script may be (rule: script size limit)",
            crate::units::format_bytes_binary(source.len() as f64),
            source.len(),
            crate::units::format_bytes_binary(MAX_SOURCE_BYTES as f64)
        );
        return Err(CompileError {
            error: place(file, "", Position::NONE, message, true),
            limit: None,
        });
    }
    // The limit that stopped the parser, and its message: the parser may
    // report the token it was given in its own words ("Expecting name of a
    // property" when it came after a dot).
    let stopped: Rc<RefCell<Option<(CompileLimit, String)>>> = Rc::default();
    let seen = stopped.clone();
    let heap = crate::heap::HeapWatch::start(limits.max_heap_bytes);
    let memory = limits.max_heap_bytes;
    let rule = rule.to_string();
    let deadline = deadline.map(|(at, rule)| (at, rule.to_string()));
    let tokens = Cell::new(0u32);
    // Volatile in Rhai, not deprecated: the one hook inside the parser.
    #[allow(deprecated)]
    engine.on_parse_token(move |token, _, _| {
        tokens.set(tokens.get().wrapping_add(1));
        if !tokens.get().is_multiple_of(64) {
            return token;
        }
        let (limit, message) = if heap.over() {
            (
                CompileLimit::Memory,
                format!(
                    "compiling the script went over its memory limit of {} (rule: {rule})",
                    crate::units::format_bytes_binary(memory as f64)
                ),
            )
        } else if let Some((_, by)) = deadline.as_ref().filter(|(at, _)| Instant::now() >= *at) {
            (
                CompileLimit::Deadline,
                format!("compiling the script ran past its deadline (rule: {by})"),
            )
        } else {
            return token;
        };
        *seen.borrow_mut() = Some((limit, message.clone()));
        Token::LexError(Box::new(LexError::Runtime(message)))
    });
    engine.compile(source).map_err(|e| match stopped.take() {
        // The limit's own message, not a syntax error's.
        Some((limit, message)) => CompileError {
            error: place(file, source, e.position(), message, true),
            limit: Some(limit),
        },
        None => CompileError {
            error: parse_error(file, source, e),
            limit: None,
        },
    })
}

/// Compiles a script and checks that every namespaced call names a host
/// function (under the default limits: [`compile`]).
pub fn check(file: &str, source: &str) -> Result<AST, ScriptError> {
    let limits = ScriptLimits::default();
    let ast = compile(
        &mut base_engine(&limits),
        file,
        source,
        &limits,
        "--scenario-memory",
        None,
    )
    .map_err(|e| e.error)?;
    let mut unknown: Option<ScriptError> = None;
    ast.walk(&mut |path| {
        if let Some(rhai::ASTNode::Expr(rhai::Expr::FnCall(call, pos))) = path.last() {
            if call.is_qualified() {
                let name = format!("{}::{}", call.namespace, call.name);
                if !host_functions().contains(&name) && unknown.is_none() {
                    let hint = host_functions()
                        .iter()
                        .map(|f| (strsim::jaro_winkler(&name, f), f))
                        .filter(|(s, _)| *s > 0.85)
                        .max_by(|a, b| a.0.total_cmp(&b.0))
                        .map(|(_, f)| format!("; did you mean {f}?"))
                        .unwrap_or_default();
                    unknown = Some(place(
                        file,
                        source,
                        *pos,
                        format!("unknown host function {name}{hint}"),
                        true,
                    ));
                }
            }
        }
        true
    });
    match unknown {
        Some(e) => Err(e),
        None => Ok(ast),
    }
}

/// Stack of the thread a script runs on. Rhai walks nested arrays and maps
/// recursively (size checks, dropping, printing), one frame per level, and a
/// script can nest as deep as its array and map limits allow; this stack
/// holds that many levels with room to spare (it is reserved, not committed:
/// only the depth actually used is touched).
pub fn script_stack_bytes(limits: &ScriptLimits) -> usize {
    let levels = limits.max_array_size.saturating_add(limits.max_map_size);
    levels
        .saturating_mul(STACK_PER_LEVEL)
        .saturating_add(64 << 20)
}

/// Stack bytes one level of nesting may take in Rhai's recursive walks
/// (measured: about 250 in a debug build; doubled).
const STACK_PER_LEVEL: usize = 512;

/// Runs a checked scenario against `host` on a thread of its own with a
/// stack deep enough for any nesting the limits allow; a limit or the
/// deadline ends it with an error. Returns what the scenario reported.
///
/// The script is compiled again on that thread (Rhai's syntax trees are not
/// `Send`); [`check`] has already accepted it.
pub fn run(
    file: &str,
    source: &str,
    host: Host,
    limits: &ScriptLimits,
) -> (ScenarioReport, Result<(), ScenarioError>) {
    let no_thread = |e: crate::gate::SpawnError| {
        let at = place(
            file,
            source,
            Position::NONE,
            format!("could not start the script's thread: {e}"),
            false,
        );
        ScenarioError::new(ScenarioErrorKind::Start, at.to_string())
    };
    std::thread::scope(|s| {
        let spawned = crate::gate::thread("rhai")
            .stack_size(script_stack_bytes(limits))
            .spawn_scoped(s, move || run_here(file, source, host, limits));
        match spawned {
            Ok(h) => h.join().unwrap_or_else(|_| {
                let at = place(
                    file,
                    source,
                    Position::NONE,
                    "the script's thread failed".into(),
                    false,
                );
                (
                    ScenarioReport::default(),
                    Err(ScenarioError::new(ScenarioErrorKind::Start, at.to_string())),
                )
            }),
            Err(e) => (ScenarioReport::default(), Err(no_thread(e))),
        }
    })
}

/// Compiles and runs a script on the current thread.
fn run_here(
    file: &str,
    source: &str,
    host: Host,
    limits: &ScriptLimits,
) -> (ScenarioReport, Result<(), ScenarioError>) {
    let halt = host.halt();
    let host = Rc::new(RefCell::new(host));
    let outcome = {
        let mut engine = base_engine(limits);
        rhai_modules::register(&mut engine, &host);
        let heap = crate::heap::HeapWatch::start(limits.max_heap_bytes);
        let memory = limits.max_heap_bytes;
        engine.on_progress(move |ops| {
            if ops % 64 == 0 && heap.over() {
                return Some(memory_limit_token(memory, "--scenario-memory"));
            }
            if ops % 1024 != 0 {
                return None;
            }
            // The reason carries its category as the value's tag.
            let (kind, reason) = match halt.check() {
                Ok(()) => return None,
                Err(Halted::Interrupted) => (ErrorKind::Interrupted, "interrupted"),
                Err(Halted::Deadline) => (
                    ErrorKind::Deadline,
                    "the scenario ran past its deadline (rule: --timeout)",
                ),
            };
            let mut token = rhai::Dynamic::from(reason.to_string());
            token.set_tag(kind.code());
            Some(token)
        });
        let deadline = Instant::now()
            .checked_add(host.borrow().time_left())
            .map(|at| (at, "--timeout"));
        let compiled = compile(
            &mut engine,
            file,
            source,
            limits,
            "--scenario-memory",
            deadline,
        );
        match compiled {
            Err(e) => Err(e.into_scenario_error()),
            Ok(ast) => engine.run_ast(&ast).map_err(|e| {
                let kind = stopped_by(&e);
                ScenarioError::new(kind, runtime_error(file, source, *e).to_string())
            }),
        }
    };
    // Background work ends with the scenario, its results kept; a task
    // never waited on that had failed fails the scenario.
    let (report, failed) = Rc::try_unwrap(host)
        .map(|h| {
            let mut h = h.into_inner();
            let failed = h.end_background();
            (h.report, failed)
        })
        .unwrap_or_default();
    let outcome = match (outcome, failed) {
        (Ok(()), Some(note)) => Err(ScenarioError::new(ScenarioErrorKind::Failed, note)),
        (outcome, _) => outcome,
    };
    (report, outcome)
}

/// The tag of the value that stops a script over its memory limit (apart
/// from the host error categories' codes).
const MEMORY_LIMIT_TAG: i32 = 1000;

/// The value that stops a script whose heap outgrew `limit` bytes.
/// `rule` names the limit (`--scenario-memory`).
pub(super) fn memory_limit_token(limit: usize, rule: &str) -> rhai::Dynamic {
    let mut token = rhai::Dynamic::from(format!(
        "the script's data went over its memory limit of {} (rule: {rule})",
        crate::units::format_bytes_binary(limit as f64)
    ));
    token.set_tag(MEMORY_LIMIT_TAG);
    token
}

/// What stopped a script, from the category its error value carries (a
/// host error's tag, or the progress check's reason): a host error the
/// script did not catch, the deadline, a signal; else a script error.
fn stopped_by(e: &EvalAltResult) -> ScenarioErrorKind {
    let tag = match e.unwrap_inner() {
        EvalAltResult::ErrorRuntime(value, _) | EvalAltResult::ErrorTerminated(value, _) => {
            value.tag()
        }
        _ => 0,
    };
    if tag == MEMORY_LIMIT_TAG {
        return ScenarioErrorKind::MemoryLimit;
    }
    match ErrorKind::from_code(tag) {
        None => ScenarioErrorKind::Script,
        Some(ErrorKind::Interrupted) => ScenarioErrorKind::Interrupted,
        Some(ErrorKind::Deadline) => ScenarioErrorKind::Deadline,
        Some(kind) => ScenarioErrorKind::Host(kind),
    }
}

pub(super) fn runtime_error(file: &str, source: &str, e: EvalAltResult) -> ScriptError {
    let pos = e.position();
    let message = match &e {
        EvalAltResult::ErrorTerminated(reason, _) => format!("stopped: {reason}"),
        EvalAltResult::ErrorTooManyOperations(_) => {
            "stopped: too many operations (rule: script operation limit)".into()
        }
        EvalAltResult::ErrorStackOverflow(_) => {
            "stopped: function calls nested too deep (rule: call depth limit)".into()
        }
        EvalAltResult::ErrorDataTooLarge(what, _) => {
            format!("stopped: {what} too large (rule: data size limits)")
        }
        _ => e.to_string(),
    };
    place(file, source, pos, message, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wherever the parser is when the deadline stops it (the check comes
    /// every 64 tokens, so the filler moves it over every kind of place,
    /// property names after a dot included), the error is the deadline's.
    #[test]
    fn a_deadline_in_the_parser_says_so_wherever_it_lands() {
        let limits = ScriptLimits::default();
        for filler in 0..70 {
            let body = "[1, 2].len() + #{a: 3}.a * (4 + 5);\n".repeat(20);
            let source = format!("{}{body}", "1;".repeat(filler));
            let e = compile(
                &mut base_engine(&limits),
                "s.rhai",
                &source,
                &limits,
                "--scenario-memory",
                Some((Instant::now(), "--timeout")),
            )
            .expect_err("the deadline has passed");
            assert!(
                matches!(e.limit, Some(CompileLimit::Deadline))
                    && e.error.to_string().contains("ran past its deadline"),
                "filler {filler}: {}",
                e.error
            );
        }
    }
}
