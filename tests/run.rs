//! `plumb run`, `check` and `list`: scenarios in Rhai against the sandbox.

mod assertions;
mod containment;
mod errors;
mod host_api;
mod kernels;
mod packs;
mod signals;
