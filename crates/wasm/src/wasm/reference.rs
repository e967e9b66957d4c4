//! The host API reference (`docs/reference/host-api.md`), generated from
//! the two places the API is declared: `wit/plumb.wit` (names, types and
//! every doc comment) and the functions the Rhai modules register (their
//! names and numbers of arguments). The tests here fail when the committed
//! page, the WIT and the Rhai modules drift apart; `PLUMB_BLESS=1 cargo
//! test -p plumb-wasm host_api_reference` writes the page anew.

use crate::script::rhai_modules::{host_arities, option_keys, OptionKeys};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use wit_parser::{
    Docs, Function, FunctionKind, Handle, InterfaceId, Resolve, Type, TypeDefKind, TypeId,
};

/// Where the page lives, from this crate.
const PAGE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/reference/host-api.md"
);

/// The WIT, as the adapter's bindings read it.
const WIT: &str = include_str!("../../../../wit/plumb.wit");

/// What the page says before the interfaces: how Rhai reads the WIT.
const INTRO: &str = "\
# Host API reference

<!-- Generated from wit/plumb.wit and the functions the Rhai modules
register: edit the WIT's doc comments, then write this page with
`PLUMB_BLESS=1 cargo test -p plumb-wasm host_api_reference`. A test fails
when this page, the WIT and the Rhai modules disagree. -->

What a scenario calls. A Rhai script calls `module::function` (`fs::write_file`);
a WebAssembly component calls the same operation through the
`plumb:bench/scenario` world (`fs.write-file`, [WebAssembly scenarios](../guide/wasm.md)).
Both are thin adapters over one Rust definition, which owns every default
and rule, so each entry below is both.

How Rhai reads the WIT:
- Names are the same, in snake case in Rhai (`write-file` is `write_file`,
  a record's `bw-bytes` is the map key `bw_bytes`).
- An options record is an options map in Rhai, with the same keys; it may be
  left out (`fs::read_file(path)`), and so may any key (`none` in WIT): it
  then takes the default given. A key the record does not have, or a value
  of the wrong kind, is an error naming the call.
- Sizes are integers (bytes) or strings with fio's suffixes (`\"4k\"`, `\"1G\"`);
  durations are seconds or strings (`\"10s\"`, `\"500ms\"`).
- A result record is a map with the same keys; a resource is a value whose
  methods are called as `h.wait()`.
- An `error` is a runtime error carrying its message, caught with
  `try { } catch (e) { }`. It is raised when the sandbox, the budget or the
  OS refuses, or when an argument is bad.
- Two Rhai reserved words show through: sync(2) is `fs::sync_all()`, and a
  job result's sync figures are read as `r[\"sync\"].total_ios`.
";

/// Rhai-only functions, which have no WIT counterpart, with what they do.
const RHAI_ONLY: &[(&str, &str, &str)] = &[
    (
        "time::measure",
        "time::measure(|| ...)",
        "Calls the closure and returns `#{seconds, result}`: how long it took on \
         the scenario's clock and what it returned. (A component measures with \
         `time.now` before and after.)",
    ),
    (
        "param",
        "param(name, default)",
        "The `-p name=value` or pack value of a parameter, converted to the \
         default's type (an integer default also takes a size, `\"4k\"`); the \
         default when the parameter is not given. WIT's `params.get`.",
    ),
];

/// The WIT's function for a Rhai one: `params::get` is Rhai's global `param`.
const RENAMED: &[(&str, &str)] = &[("params::get", "param")];

/// Result keys Rhai spells otherwise than the WIT, with why: (record, WIT
/// field, Rhai key).
const KEY_RENAMES: &[(&str, &str, &str)] = &[
    // A WIT word cannot begin with a digit, so `p99-9` cannot be written.
    ("live-latency", "p999", "p99_9"),
];

/// A record field's key as Rhai spells it.
fn rhai_key(record: &str, field: &str) -> String {
    KEY_RENAMES
        .iter()
        .find(|(r, f, _)| *r == record && *f == field)
        .map_or_else(|| snake(field), |(_, _, k)| k.to_string())
}

/// The parsed WIT and what the page needs from it.
struct Wit {
    resolve: Resolve,
    /// The interfaces the scenario world imports, in its order.
    imports: Vec<InterfaceId>,
}

impl Wit {
    fn parse() -> Wit {
        let mut resolve = Resolve::new();
        let package = resolve
            .push_str("plumb.wit", WIT)
            .expect("wit/plumb.wit parses");
        let world = resolve
            .select_world(&[package], Some("scenario"))
            .expect("the scenario world");
        let imports = resolve.worlds[world]
            .imports
            .values()
            .filter_map(|item| match item {
                wit_parser::WorldItem::Interface { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        Wit { resolve, imports }
    }

    fn interface_name(&self, id: InterfaceId) -> &str {
        self.resolve.interfaces[id].name.as_deref().unwrap_or("?")
    }

    /// A type as the WIT writes it.
    fn ty(&self, t: &Type) -> String {
        match t {
            Type::Bool => "bool".into(),
            Type::U8 => "u8".into(),
            Type::U16 => "u16".into(),
            Type::U32 => "u32".into(),
            Type::U64 => "u64".into(),
            Type::S8 => "s8".into(),
            Type::S16 => "s16".into(),
            Type::S32 => "s32".into(),
            Type::S64 => "s64".into(),
            Type::F32 => "f32".into(),
            Type::F64 => "f64".into(),
            Type::Char => "char".into(),
            Type::String => "string".into(),
            Type::ErrorContext => "error-context".into(),
            Type::Id(id) => self.type_id(*id),
        }
    }

    fn type_id(&self, id: TypeId) -> String {
        let def = &self.resolve.types[id];
        if let Some(name) = &def.name {
            return name.clone();
        }
        match &def.kind {
            TypeDefKind::Option(t) => format!("option<{}>", self.ty(t)),
            TypeDefKind::List(t) => format!("list<{}>", self.ty(t)),
            TypeDefKind::Tuple(t) => format!(
                "tuple<{}>",
                t.types
                    .iter()
                    .map(|t| self.ty(t))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            TypeDefKind::Result(r) => format!(
                "result<{}, {}>",
                r.ok.as_ref().map_or("_".into(), |t| self.ty(t)),
                r.err.as_ref().map_or("_".into(), |t| self.ty(t))
            ),
            TypeDefKind::Handle(Handle::Own(t)) => self.type_id(*t),
            TypeDefKind::Handle(Handle::Borrow(t)) => format!("borrow<{}>", self.type_id(*t)),
            TypeDefKind::Type(t) => self.ty(t),
            other => format!("{other:?}"),
        }
    }

    /// `name: func(a: T) -> R`, as the WIT declares it.
    fn signature(&self, f: &Function) -> String {
        let params: Vec<String> = f
            .params
            .iter()
            .filter(|p| p.name != "self")
            .map(|p| format!("{}: {}", p.name, self.ty(&p.ty)))
            .collect();
        let result = f
            .result
            .as_ref()
            .map(|t| format!(" -> {}", self.ty(t)))
            .unwrap_or_default();
        format!("{}: func({}){result}", f.item_name(), params.join(", "))
    }
}

/// A WIT name as Rhai spells it.
fn snake(name: &str) -> String {
    name.replace('-', "_")
}

/// Doc comment text, or "" when there is none.
fn docs(d: &Docs) -> &str {
    d.contents.as_deref().map_or("", str::trim)
}

/// A doc comment on one line, for a table cell.
fn cell(d: &Docs) -> String {
    docs(d)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// The Rhai name of an interface function (`fs::write_file`).
fn rhai_name(interface: &str, f: &Function) -> String {
    let wit = format!("{interface}::{}", snake(f.item_name()));
    RENAMED
        .iter()
        .find(|(w, _)| *w == wit)
        .map_or(wit, |(_, r)| r.to_string())
}

/// How a Rhai script calls `f`: its arguments by the WIT's names, those it
/// may leave out in brackets (`fs::read_file(path[, options])`).
fn rhai_call(name: &str, f: &Function, arities: &BTreeSet<usize>) -> String {
    let params: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
    let least = arities.iter().next().copied().unwrap_or(params.len());
    let mut call = format!("{name}(");
    for (i, p) in params.iter().enumerate() {
        if i == least && least < params.len() {
            call.push('[');
        }
        if i > 0 {
            call.push_str(", ");
        }
        call.push_str(p);
    }
    if least < params.len() {
        call.push(']');
    }
    call.push(')');
    call
}

/// The types an interface declares, in its order, each once.
fn types_section(wit: &Wit, iface: InterfaceId, out: &mut String) {
    let interface = &wit.resolve.interfaces[iface];
    for (name, id) in &interface.types {
        let def = &wit.resolve.types[*id];
        let what = match &def.kind {
            TypeDefKind::Record(_) => "record",
            TypeDefKind::Variant(_) => "variant",
            TypeDefKind::Enum(_) => "enum",
            TypeDefKind::Resource => continue,
            TypeDefKind::Type(_) => continue,
            _ => "type",
        };
        let _ = writeln!(out, "#### {what} `{name}`\n");
        if !docs(&def.docs).is_empty() {
            let _ = writeln!(out, "{}\n", docs(&def.docs));
        }
        match &def.kind {
            TypeDefKind::Record(r) => {
                let _ = writeln!(out, "| key | type | |\n|---|---|---|");
                for f in &r.fields {
                    let key = rhai_key(name, &f.name);
                    let key = if key == snake(&f.name) {
                        format!("`{key}`")
                    } else {
                        format!("`{key}` (WIT `{}`)", f.name)
                    };
                    let _ = writeln!(out, "| {key} | `{}` | {} |", wit.ty(&f.ty), cell(&f.docs));
                }
            }
            TypeDefKind::Variant(v) => {
                let _ = writeln!(out, "| case | carries | |\n|---|---|---|");
                for c in &v.cases {
                    let ty =
                        c.ty.as_ref()
                            .map_or("—".into(), |t| format!("`{}`", wit.ty(t)));
                    let _ = writeln!(out, "| `{}` | {ty} | {} |", c.name, cell(&c.docs));
                }
            }
            TypeDefKind::Enum(e) => {
                let _ = writeln!(out, "| value (a string in Rhai) | |\n|---|---|");
                for c in &e.cases {
                    let _ = writeln!(out, "| `{}` | {} |", c.name, cell(&c.docs));
                }
            }
            _ => {}
        }
        out.push('\n');
    }
}

/// One function's entry: its Rhai call, its WIT signature, its docs.
fn function_entry(wit: &Wit, interface: &str, f: &Function, out: &mut String) {
    let name = rhai_name(interface, f);
    let arities = host_arities()
        .get(&name)
        .cloned()
        .unwrap_or_else(|| BTreeSet::from([f.params.len()]));
    let _ = writeln!(out, "### `{}`\n", rhai_call(&name, f, &arities));
    let _ = writeln!(out, "WIT: `{}`\n", wit.signature(f));
    if !docs(&f.docs).is_empty() {
        let _ = writeln!(out, "{}\n", docs(&f.docs));
    }
}

/// A resource's methods: called on the value in Rhai (`h.wait()`).
fn resource_entry(
    wit: &Wit,
    name: &str,
    def: &wit_parser::TypeDef,
    methods: &[&Function],
    out: &mut String,
) {
    let _ = writeln!(out, "### resource `{name}`\n");
    if !docs(&def.docs).is_empty() {
        let _ = writeln!(out, "{}\n", docs(&def.docs));
    }
    let _ = writeln!(out, "| Rhai | WIT | |\n|---|---|---|");
    for m in methods {
        let args: Vec<&str> = m
            .params
            .iter()
            .filter(|p| p.name != "self")
            .map(|p| p.name.as_str())
            .collect();
        let _ = writeln!(
            out,
            "| `h.{}({})` | `{}` | {} |",
            snake(m.item_name()),
            args.join(", "),
            wit.signature(m),
            cell(&m.docs)
        );
    }
    out.push('\n');
}

/// The whole page.
fn page() -> String {
    let wit = Wit::parse();
    let mut out = String::from(INTRO);
    out.push_str("\nInterfaces: ");
    let names: Vec<String> = wit
        .imports
        .iter()
        .map(|id| {
            let n = wit.interface_name(*id);
            format!("[`{n}`](#{n})")
        })
        .collect();
    out.push_str(&names.join(", "));
    out.push_str(", and [Rhai only](#rhai-only).\n");
    for &iface in &wit.imports {
        let interface = &wit.resolve.interfaces[iface];
        let name = wit.interface_name(iface);
        let _ = writeln!(out, "\n## {name}\n");
        if !docs(&interface.docs).is_empty() {
            let _ = writeln!(out, "{}\n", docs(&interface.docs));
        }
        let mut resources: BTreeMap<TypeId, Vec<&Function>> = BTreeMap::new();
        for f in interface.functions.values() {
            match f.kind {
                FunctionKind::Method(r) | FunctionKind::Static(r) => {
                    resources.entry(r).or_default().push(f)
                }
                _ => function_entry(&wit, name, f, &mut out),
            }
        }
        for (id, methods) in &resources {
            let def = &wit.resolve.types[*id];
            resource_entry(
                &wit,
                def.name.as_deref().unwrap_or("?"),
                def,
                methods,
                &mut out,
            );
        }
        if interface.types.values().any(|id| {
            matches!(
                wit.resolve.types[*id].kind,
                TypeDefKind::Record(_) | TypeDefKind::Variant(_) | TypeDefKind::Enum(_)
            )
        }) {
            let _ = writeln!(out, "### types of `{name}`\n");
            types_section(&wit, iface, &mut out);
        }
    }
    out.push_str("\n## Rhai only\n\n");
    for (_, call, what) in RHAI_ONLY {
        let _ = writeln!(out, "### `{call}`\n\n{what}\n");
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[test]
fn host_api_reference_is_the_generated_page() {
    let fresh = page();
    if std::env::var_os("PLUMB_BLESS").is_some() {
        std::fs::write(PAGE, &fresh).expect("write docs/reference/host-api.md");
        return;
    }
    let committed = std::fs::read_to_string(PAGE).expect("docs/reference/host-api.md");
    assert!(
        committed == fresh,
        "docs/reference/host-api.md differs from what wit/plumb.wit and the Rhai modules \
         give: write it with PLUMB_BLESS=1 cargo test -p plumb-wasm host_api_reference \
         (edit the WIT's doc comments, not the page)"
    );
}

#[test]
fn every_wit_function_is_registered_for_rhai_with_its_arguments() {
    let wit = Wit::parse();
    let arities = host_arities();
    let mut from_wit = BTreeSet::new();
    for &iface in &wit.imports {
        let name = wit.interface_name(iface);
        for f in wit.resolve.interfaces[iface].functions.values() {
            if !matches!(f.kind, FunctionKind::Freestanding) {
                continue;
            }
            let rhai = rhai_name(name, f);
            from_wit.insert(rhai.clone());
            if RENAMED.iter().any(|(_, r)| *r == rhai) {
                continue;
            }
            let taken = arities.get(&rhai).unwrap_or_else(|| {
                panic!("{rhai} (WIT {name}.{}) is not registered for Rhai", f.name)
            });
            assert_eq!(
                taken.iter().max(),
                Some(&f.params.len()),
                "{rhai} takes {taken:?} arguments in Rhai; the WIT's {} has {}",
                f.name,
                f.params.len()
            );
            // What Rhai lets a script leave out is an options record (or
            // report::metric's marks).
            for &fewer in taken.iter().filter(|&&n| n < f.params.len()) {
                let left_out: Vec<&str> =
                    f.params[fewer..].iter().map(|p| p.name.as_str()).collect();
                assert!(
                    left_out == ["options"] || left_out == ["marks"],
                    "{rhai} may leave out {left_out:?} in Rhai"
                );
            }
        }
    }
    let rhai_only: BTreeSet<String> = RHAI_ONLY.iter().map(|(n, _, _)| n.to_string()).collect();
    for name in arities.keys() {
        assert!(
            from_wit.contains(name) || rhai_only.contains(name),
            "{name} is registered for Rhai but is not in the WIT"
        );
    }
}

#[test]
fn every_options_record_has_the_keys_of_the_rhai_options_map() {
    let wit = Wit::parse();
    let mut checked = 0;
    for &iface in &wit.imports {
        let name = wit.interface_name(iface);
        for f in wit.resolve.interfaces[iface].functions.values() {
            let Some(options) = f.params.iter().find(|p| p.name == "options") else {
                continue;
            };
            let Type::Id(id) = options.ty else { continue };
            let TypeDefKind::Record(record) = &wit.resolve.types[id].kind else {
                // io's jobs are fio's name=value options.
                continue;
            };
            let rhai = rhai_name(name, f);
            let wit_keys: BTreeSet<String> = record.fields.iter().map(|f| snake(&f.name)).collect();
            let rhai_keys: BTreeSet<String> = match option_keys(&rhai) {
                Some(OptionKeys::Fields(fields)) => fields.iter().map(|f| f.to_string()).collect(),
                Some(OptionKeys::Fio) if rhai == "io::group" => {
                    // Its options map is read into GroupOptions.
                    crate::script::lint::fields::<crate::api::GroupOptions>()
                        .iter()
                        .map(|f| f.to_string())
                        .collect()
                }
                other => panic!("{rhai}: no options struct for its WIT record ({other:?})"),
            };
            assert_eq!(
                wit_keys, rhai_keys,
                "{rhai}: the WIT record's keys and the Rhai options map's differ"
            );
            // Every key may be left out, but a network peer's address.
            for field in &record.fields {
                let optional = matches!(field.ty, Type::Id(t)
                    if matches!(wit.resolve.types[t].kind, TypeDefKind::Option(_)));
                assert!(
                    optional || field.name == "addr",
                    "{rhai}: the WIT record's {} is not an option",
                    field.name
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 15, "{checked} options records checked");
}

#[test]
fn every_resource_method_is_registered_for_rhai() {
    let wit = Wit::parse();
    // Methods are registered on the engine, not in a module: the File
    // type's in fs.rs, the background handles' in io.rs.
    let rhai = [
        include_str!("../../../script/src/script/rhai_modules/fs.rs"),
        include_str!("../../../script/src/script/rhai_modules/io.rs"),
    ]
    .concat();
    let mut methods = BTreeSet::new();
    for &iface in &wit.imports {
        for f in wit.resolve.interfaces[iface].functions.values() {
            if matches!(f.kind, FunctionKind::Method(_)) {
                methods.insert(snake(f.item_name()));
            }
        }
    }
    for m in &methods {
        assert!(
            rhai.contains(&format!("\"{m}\"")),
            "the method {m} is not registered for Rhai"
        );
    }
    assert_eq!(methods.len(), 14, "{methods:?}");
}

/// The keys of a result as Rhai's map has them: the serialized value's.
fn serialized_keys<T: serde::Serialize>(value: &T) -> BTreeSet<String> {
    match serde_json::to_value(value).expect("serializes") {
        serde_json::Value::Object(map) => map.keys().cloned().collect(),
        other => panic!("not a map: {other}"),
    }
}

/// The keys of the WIT record `interface.record`, as Rhai spells them.
fn record_keys(wit: &Wit, interface: &str, record: &str) -> BTreeSet<String> {
    let iface = wit
        .imports
        .iter()
        .find(|id| wit.interface_name(**id) == interface)
        .unwrap_or_else(|| panic!("no interface {interface}"));
    let id = wit.resolve.interfaces[*iface].types[record];
    match &wit.resolve.types[id].kind {
        TypeDefKind::Record(r) => r.fields.iter().map(|f| rhai_key(record, &f.name)).collect(),
        other => panic!("{interface}.{record} is {other:?}"),
    }
}

#[test]
fn result_records_have_the_keys_of_the_rhai_maps() {
    use crate::api::compute::CpuProgress;
    use crate::api::fs::{FileStat, StormReport, TransferReport};
    use crate::model::machine::HostInfo;
    use crate::runner::live::{LiveDirection, LiveProgress};
    use crate::stats::live_latency::LivePercentiles;
    let wit = Wit::parse();
    let transfer = TransferReport {
        bytes: 0,
        seconds: 0.0,
        bw_bytes: 0.0,
        started_s: 0.0,
        ended_s: 0.0,
        cached: false,
    };
    let storm = StormReport {
        ops: 0,
        seconds: 0.0,
        ops_per_sec: 0.0,
        started_s: 0.0,
        ended_s: 0.0,
    };
    let stat = FileStat {
        size: 0,
        is_dir: false,
        is_symlink: false,
        mtime: 0,
    };
    let cpu = crate::cpu::CpuResult {
        kernel: String::new(),
        threads: 1,
        param: 0,
        unit: String::new(),
        rate: 0.0,
        per_thread: vec![],
        events_per_sec: 0.0,
        events: 0,
        seconds: 0.0,
        single_thread_rate: 0.0,
        efficiency: 0.0,
        started_s: Some(0.0),
        ended_s: Some(0.0),
    };
    let kernel = &crate::cpu::catalogue()[0];
    let bandwidth = crate::mem::BandwidthResult {
        oper: crate::mem::Oper::Read,
        block_size: 0,
        scope: crate::mem::Scope::Global,
        threads: 1,
        mib_per_sec: 0.0,
        per_thread: vec![],
        bytes: 0,
        events: 0,
        seconds: 0.0,
    };
    let plateau = crate::mem::Plateau {
        from: 0,
        to: 0,
        ns: 0.0,
    };
    let latency = crate::net::Latency {
        count: 0,
        min_us: 0.0,
        mean_us: 0.0,
        p50_us: 0.0,
        p90_us: 0.0,
        p99_us: 0.0,
        p999_us: 0.0,
        max_us: 0.0,
    };
    let stream = crate::net::StreamResult {
        direction: crate::net::Direction::Send,
        bytes: 0,
        seconds: 0.0,
        gbps: 0.0,
        intervals: vec![],
        retransmits: None,
    };
    let throughput = crate::net::Throughput {
        addr: String::new(),
        streams: vec![],
        send_gbps: 0.0,
        recv_gbps: 0.0,
        total_gbps: 0.0,
        bytes: 0,
        seconds: 0.0,
        intervals: vec![],
        retransmits: None,
        loopback: false,
        started_s: Some(0.0),
        ended_s: Some(0.0),
    };
    let rtt = crate::net::RttResult {
        addr: String::new(),
        size: 0,
        rtt: latency.clone(),
        loopback: false,
    };
    let connect = crate::net::ConnectTime {
        addr: String::new(),
        failures: 0,
        connect: latency.clone(),
        loopback: false,
    };
    let wait = crate::net::PortWait {
        addr: String::new(),
        seconds: 0.0,
        attempts: 0,
    };
    let op = crate::trace::OpSummary {
        op: String::new(),
        count: 0,
        bytes: 0,
        expected_errors: 0,
        divergences: 0,
        mean_us: 0.0,
        p50_us: 0.0,
        p99_us: 0.0,
        max_us: 0.0,
    };
    let step = crate::trace::StepSummary {
        step: String::new(),
        count: 0,
        mean_us: 0.0,
        p50_us: 0.0,
        p99_us: 0.0,
        max_us: 0.0,
    };
    let replay = crate::trace::ReplayResult {
        ops: vec![],
        total_ops: 0,
        divergences: 0,
        expected_errors: 0,
        skipped: 0,
        first_divergence: None,
        halted: None,
        seconds: 0.0,
        original_seconds: 0.0,
        reference: crate::trace::Reference::Untraced,
        reference_seconds: 0.0,
        time_ratio: 0.0,
        files_created: 0,
        bytes_laid_out: 0,
        clients: 1,
        client_seconds: vec![],
        steps: vec![],
    };
    let pairs = [
        ("trace", "replay-result", serialized_keys(&replay)),
        ("trace", "op-summary", serialized_keys(&op)),
        ("trace", "step-summary", serialized_keys(&step)),
        ("cpu", "cpu-result", serialized_keys(&cpu)),
        ("cpu", "kernel-info", serialized_keys(kernel)),
        ("mem", "bandwidth-result", serialized_keys(&bandwidth)),
        ("mem", "plateau", serialized_keys(&plateau)),
        ("net", "latency", serialized_keys(&latency)),
        ("net", "stream-result", serialized_keys(&stream)),
        ("net", "throughput-result", serialized_keys(&throughput)),
        ("net", "rtt-result", serialized_keys(&rtt)),
        ("net", "connect-result", serialized_keys(&connect)),
        ("net", "port-wait", serialized_keys(&wait)),
        ("types", "transfer", serialized_keys(&transfer)),
        ("types", "storm", serialized_keys(&storm)),
        ("fs", "file-stat", serialized_keys(&stat)),
        (
            "types",
            "progress",
            serialized_keys(&LiveProgress::default()),
        ),
        (
            "types",
            "live-direction",
            serialized_keys(&LiveDirection::default()),
        ),
        (
            "types",
            "live-latency",
            serialized_keys(&LivePercentiles::default()),
        ),
        (
            "cpu",
            "cpu-progress",
            serialized_keys(&CpuProgress::default()),
        ),
        ("sys", "host-info", serialized_keys(&HostInfo::default())),
    ];
    let mut differ = Vec::new();
    for (interface, record, rhai) in pairs {
        let wit = record_keys(&wit, interface, record);
        if wit != rhai {
            differ.push(format!(
                "{interface}.{record}: only in WIT {:?}, only in Rhai {:?}",
                wit.difference(&rhai).collect::<Vec<_>>(),
                rhai.difference(&wit).collect::<Vec<_>>()
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
