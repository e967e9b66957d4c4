//! How written data is checked beyond the method (`verify=`): when
//! (`verify_backlog`), what a failure does (`verify_fatal`) and leaves
//! behind (`verify_dump`).

/// The job's verification options, with fio's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerifyOpts {
    /// `verify_backlog`: verify every this many blocks written, as the job
    /// goes, instead of all at its end (0).
    pub backlog: u64,
    /// `verify_dump`: write each block that fails its check to
    /// `FILE.OFFSET.received` beside its file.
    pub dump: bool,
    /// `verify_fatal`: stop at the first block that fails (else every
    /// block is checked and the failures counted).
    pub fatal: bool,
}
