//! How offsets, files and directions are chosen beyond `rw`/`bs`: fio's
//! `rw=` modifiers, zones, alignment, file service and trims.

/// The job's pattern options, with fio's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PatternOpts {}
