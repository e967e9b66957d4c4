//! What `plumb check` can tell from a Rhai scenario's syntax tree before
//! it runs: option maps written as literals with keys their host function
//! does not take (the keys come from the options structs themselves, see
//! [`super::rhai_modules::option_keys`]), and capabilities a call visibly
//! needs that the pack does not declare — the ones the host refuses at run
//! time when undeclared ([`crate::api::Host::allow`]): direct I/O, root,
//! and more threads than declared.

use super::rhai_modules::{option_keys, OptionKeys};
use super::ScriptError;
use crate::api::Capabilities;
use rhai::{ASTNode, Dynamic, Expr, Position, Stmt, AST};

/// The field names serde reads for `T` (its derived `Deserialize` passes
/// them to `deserialize_struct`): the one list of an options struct's keys.
pub fn fields<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    /// A deserializer that only records the field list it is asked for.
    struct Probe(&'static [&'static str]);
    impl<'de> de::Deserializer<'de> for &mut Probe {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only a struct's fields are read"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = fields;
            Err(de::Error::custom("fields read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut probe = Probe(&[]);
    let _ = T::deserialize(&mut probe);
    probe.0
}

/// One key of a literal options map: its name, its value when that is a
/// literal too, and where it is.
struct Key {
    name: String,
    value: Option<Dynamic>,
    pos: Position,
}

/// The keys of `e` when it is a literal map (written out, or folded into a
/// constant by the optimizer).
fn literal_map(e: &Expr) -> Option<Vec<Key>> {
    match e {
        Expr::Map(m, _) => Some(
            m.0.iter()
                .map(|(k, v)| Key {
                    name: k.name.to_string(),
                    value: v.get_literal_value(None),
                    pos: k.pos,
                })
                .collect(),
        ),
        Expr::DynamicConstant(d, pos) => d.read_lock::<rhai::Map>().map(|m| {
            m.iter()
                .map(|(k, v)| Key {
                    name: k.to_string(),
                    value: Some(v.clone()),
                    pos: *pos,
                })
                .collect()
        }),
        _ => None,
    }
}

/// The option maps a call's arguments hold: literal maps, and the literal
/// maps in a literal array (`io::group([#{…}, #{…}])`).
fn option_maps(args: &[Expr], fio: bool) -> Vec<Vec<Key>> {
    let mut out = Vec::new();
    for a in args {
        if let Some(m) = literal_map(a) {
            out.push(m);
        } else if let (true, Expr::Array(items, _)) = (fio, a) {
            out.extend(items.iter().filter_map(literal_map));
        }
    }
    out
}

/// True when a literal option value turns a flag on (`true`, `1`, `"1"`).
fn on(v: &Option<Dynamic>) -> bool {
    match v {
        Some(d) => {
            d.as_bool().unwrap_or(false)
                || d.as_int().is_ok_and(|i| i != 0)
                || d.clone().into_string().is_ok_and(|s| s.trim() == "1")
        }
        None => false,
    }
}

/// Everything found in the scenario `file` (its `source` compiled to
/// `ast`): unknown option keys, and — when `declared` holds its pack's
/// capabilities — what it visibly needs beyond them. Each names the file,
/// line and column of the key or call.
pub fn findings(
    file: &str,
    source: &str,
    ast: &AST,
    declared: Option<&Capabilities>,
) -> Vec<ScriptError> {
    let mut out = Vec::new();
    let mut found = |pos: Position, message: String| {
        out.push(super::rhai_engine::place(file, source, pos, message, true));
    };
    ast.walk(&mut |path| {
        // A call is an expression, or a statement of its own.
        let (call, pos) = match path.last() {
            Some(ASTNode::Expr(Expr::FnCall(call, pos))) => (call, pos),
            Some(ASTNode::Stmt(Stmt::FnCall(call, pos))) => (call, pos),
            _ => return true,
        };
        if !call.is_qualified() {
            return true;
        }
        let name = format!("{}::{}", call.namespace, call.name);
        let keys = option_keys(&name);
        let maps = match keys {
            Some(k) => option_maps(&call.args, matches!(k, OptionKeys::Fio)),
            None => Vec::new(),
        };
        for m in &maps {
            for k in m {
                let (known, hint) = match keys {
                    Some(OptionKeys::Fio) => (
                        crate::job::options::is_known(&k.name),
                        crate::job::options::suggest(&k.name),
                    ),
                    Some(OptionKeys::Fields(f)) => (
                        f.contains(&k.name.as_str()),
                        f.iter()
                            .map(|c| (strsim::jaro_winkler(&k.name, c), *c))
                            .filter(|(s, _)| *s > 0.8)
                            .max_by(|a, b| a.0.total_cmp(&b.0))
                            .map(|(_, c)| c),
                    ),
                    None => (true, None),
                };
                if !known {
                    let hint = hint
                        .map(|h| format!(" (did you mean '{h}'?)"))
                        .unwrap_or_default();
                    found(
                        k.pos,
                        format!("unknown key '{}' in {name} options{hint}", k.name),
                    );
                }
            }
        }
        let Some(c) = declared else {
            return true;
        };
        for k in maps.iter().flatten() {
            if k.name == "direct" && on(&k.value) && !c.direct_io {
                found(
                    k.pos,
                    format!("{name} asks for direct I/O, which pack.toml does not declare (add direct_io = true under [capabilities])"),
                );
            }
            let threads = k.value.as_ref().and_then(|v| v.as_int().ok());
            if let (Some(n), Some(t)) = (threads, c.threads) {
                if k.name == "numjobs" && n > i64::from(t) {
                    found(
                        k.pos,
                        format!("{name} asks for {n} threads (numjobs) but pack.toml declares threads = {t}"),
                    );
                }
            }
        }
        if name == "fs::drop_caches" && !c.root {
            found(
                *pos,
                "fs::drop_caches needs root, which pack.toml does not declare (add root = true under [capabilities])".into(),
            );
        }
        true
    });
    out
}
