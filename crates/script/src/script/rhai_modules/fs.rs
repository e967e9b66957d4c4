//! `fs`: whole files, names, storms, and the `File` handle's methods.

use super::*;

/// A transfer as a map: the API's [`TransferReport`], serialized.
pub(super) fn transfer_map(t: Transfer) -> R<Dynamic> {
    to_map(&TransferReport::from(t))
}

/// A storm as a map: the API's [`StormReport`], serialized.
fn storm_map(s: Storm) -> R<Dynamic> {
    to_map(&StormReport::from(s))
}

/// The module's name, for the progress line.
const NS: &str = "fs";

/// `fs`: [`whole_files`], [`names`] and [`storms`].
pub(super) fn fs_module() -> Module {
    let mut m = Module::new();
    whole_files(&mut m);
    names(&mut m);
    storms(&mut m);
    m
}

/// Opening a file, and whole-file writes, reads and copies.
fn whole_files(m: &mut Module) {
    native!(m, "open", h, |path: &str| -> ScriptFile {
        let f = h.borrow_mut().open(path, Default::default()).map_err(api)?;
        Ok(Rc::new(RefCell::new(f)))
    });
    native!(m, "open", h, |path: &str, o: Map| -> ScriptFile {
        let f = h
            .borrow_mut()
            .open(path, options("fs::open", o)?)
            .map_err(api)?;
        Ok(Rc::new(RefCell::new(f)))
    });
    native!(m, "write_file", h, |path: &str, size: Dynamic| -> Dynamic {
        let size = to_bytes("fs::write_file size", &size)?;
        transfer_map(
            h.borrow_mut()
                .write_file(path, size, &Default::default())
                .map_err(api)?,
        )
    });
    native!(m, "write_file", h, |path: &str,
                                 size: Dynamic,
                                 o: Map|
     -> Dynamic {
        let size = to_bytes("fs::write_file size", &size)?;
        let o = options("fs::write_file", o)?;
        transfer_map(h.borrow_mut().write_file(path, size, &o).map_err(api)?)
    });
    native!(m, "read_file", h, |path: &str| -> Dynamic {
        transfer_map(
            h.borrow_mut()
                .read_file(path, &Default::default())
                .map_err(api)?,
        )
    });
    native!(m, "read_file", h, |path: &str, o: Map| -> Dynamic {
        let o = options("fs::read_file", o)?;
        transfer_map(h.borrow_mut().read_file(path, &o).map_err(api)?)
    });
    native!(m, "copy", h, |src: &str, dst: &str| -> Dynamic {
        transfer_map(
            h.borrow_mut()
                .copy(src, dst, &Default::default())
                .map_err(api)?,
        )
    });
    native!(m, "copy", h, |src: &str, dst: &str, o: Map| -> Dynamic {
        let o = options("fs::copy", o)?;
        transfer_map(h.borrow_mut().copy(src, dst, &o).map_err(api)?)
    });
    native!(m, "start_copy", h, |src: &str,
                                 dst: &str|
     -> Task<Transfer> {
        h.borrow_mut()
            .start_copy(src, dst, &Default::default())
            .map_err(api)
    });
    native!(m, "start_copy", h, |src: &str,
                                 dst: &str,
                                 o: Map|
     -> Task<Transfer> {
        let o = options("fs::start_copy", o)?;
        h.borrow_mut().start_copy(src, dst, &o).map_err(api)
    });
}

/// Names, metadata and the cache: rename, remove, mkdir, list, stat, sync, evict, room.
fn names(m: &mut Module) {
    native!(m, "rename", h, |a: &str, b: &str| -> () {
        h.borrow_mut().rename(a, b).map_err(api)
    });
    native!(m, "remove", h, |p: &str| -> () {
        h.borrow_mut().remove(p).map_err(api)
    });
    native!(m, "remove_all", h, |p: &str| -> () {
        h.borrow_mut().remove_all(p).map_err(api)
    });
    native!(m, "mkdir", h, |p: &str| -> () {
        h.borrow_mut().mkdir(p).map_err(api)
    });
    native!(m, "list", h, |p: &str| -> Array {
        let names = h.borrow().list(p).map_err(api)?;
        Ok(names.into_iter().map(Dynamic::from).collect())
    });
    native!(m, "stat", h, |p: &str| -> Dynamic {
        let st = h.borrow().stat(p).map_err(api)?;
        to_map(&st)
    });
    native!(m, "exists", h, |p: &str| -> bool {
        h.borrow().exists(p).map_err(api)
    });
    native!(m, "sync_all", h, || -> () {
        h.borrow_mut().sync_all();
        Ok(())
    });
    native!(m, "fsync_dir", h, |p: &str| -> () {
        h.borrow_mut().fsync_dir(p).map_err(api)
    });
    native!(m, "evict", h, |p: &str| -> () {
        h.borrow_mut().evict(p).map_err(api)
    });
    native!(m, "room", h, || -> i64 {
        let bytes = h.borrow_mut().room().map_err(api)?;
        Ok(i64::try_from(bytes).unwrap_or(i64::MAX))
    });
    native!(m, "drop_caches", h, || -> () {
        h.borrow_mut().drop_caches().map_err(api)
    });
}

/// The create, stat and remove storms.
fn storms(m: &mut Module) {
    native!(m, "create_files", h, |dir: &str,
                                   count: i64,
                                   size: Dynamic|
     -> Dynamic {
        let size = to_bytes("fs::create_files size", &size)?;
        let count = u64::try_from(count).map_err(|_| err("fs::create_files: count is negative"))?;
        storm_map(
            h.borrow_mut()
                .create_files(dir, count, size, &Default::default())
                .map_err(api)?,
        )
    });
    native!(m, "create_files", h, |dir: &str,
                                   count: i64,
                                   size: Dynamic,
                                   o: Map|
     -> Dynamic {
        let size = to_bytes("fs::create_files size", &size)?;
        let count = u64::try_from(count).map_err(|_| err("fs::create_files: count is negative"))?;
        let o = options("fs::create_files", o)?;
        storm_map(
            h.borrow_mut()
                .create_files(dir, count, size, &o)
                .map_err(api)?,
        )
    });
    native!(m, "stat_files", h, |dir: &str| -> Dynamic {
        storm_map(h.borrow_mut().stat_files(dir).map_err(api)?)
    });
    native!(m, "remove_files", h, |dir: &str| -> Dynamic {
        storm_map(h.borrow_mut().remove_files(dir).map_err(api)?)
    });
}

pub(super) fn register_file_type(engine: &mut Engine, host: &Shared) {
    engine.register_type_with_name::<ScriptFile>("File");
    engine.register_fn(
        "read_at",
        |f: &mut ScriptFile, off: i64, len: i64| -> R<i64> {
            f.borrow_mut()
                .read_at(off, len)
                .map(|n| n as i64)
                .map_err(api)
        },
    );
    let h = host.clone();
    engine.register_fn(
        "write_at",
        move |f: &mut ScriptFile, off: i64, len: i64| -> R<i64> {
            f.borrow_mut()
                .write_at(&mut h.borrow_mut(), off, len)
                .map(|n| n as i64)
                .map_err(api)
        },
    );
    let h = host.clone();
    engine.register_fn("append", move |f: &mut ScriptFile, len: i64| -> R<i64> {
        f.borrow_mut()
            .append(&mut h.borrow_mut(), len)
            .map(|n| n as i64)
            .map_err(api)
    });
    engine.register_fn("fsync", |f: &mut ScriptFile| -> R<()> {
        f.borrow_mut().fsync().map_err(api)
    });
    engine.register_fn("fdatasync", |f: &mut ScriptFile| -> R<()> {
        f.borrow_mut().fdatasync().map_err(api)
    });
    let h = host.clone();
    engine.register_fn("truncate", move |f: &mut ScriptFile, len: i64| -> R<()> {
        f.borrow_mut()
            .truncate(&mut h.borrow_mut(), len)
            .map_err(api)
    });
    let h = host.clone();
    engine.register_fn("fallocate", move |f: &mut ScriptFile, len: i64| -> R<()> {
        f.borrow_mut()
            .fallocate(&mut h.borrow_mut(), len)
            .map_err(api)
    });
    engine.register_fn("size", |f: &mut ScriptFile| -> R<i64> {
        f.borrow().size().map(|n| n as i64).map_err(api)
    });
    engine.register_fn("close", |f: &mut ScriptFile| f.borrow_mut().close());
}
