//! The macro that turns the table of operations (`ops.rs`) into
//! [`OpKind`](super::OpKind) and everything that follows from it.
//!
//! Each entry of the table is one operation:
//!
//! ```text
//! /// docs
//! Variant ["name", "other name"] since VERSION {
//!     /// docs
//!     field @ WORD: Type as Kind,
//!     ...
//! } counted(EXPR) moves(EXPR) reaches(EXPR) makes(EXPR);
//! ```
//!
//! - the names the trace spells it with (more than one when a field of
//!   kind `Call` tells which system call it was);
//! - the first trace version that holds it;
//! - its fields, in the order they are checked when read, each with the
//!   word of the `op` record it is written at (5 is the first argument; 4,
//!   the name, for a `Call`) and its kind of argument (`args.rs`), which
//!   reads, checks and writes it;
//! - optional facets, expressions over the fields (bound by reference):
//!   `counted` (default true: an operation of the program's own, as
//!   reports count them), `moves` (bytes read or written, default 0) and
//!   `reaches` (how it can make a file larger, for the byte budget:
//!   a [`Reach`](super::Reach); default none) and `makes` (the name it
//!   may make, for the budget's inodes: an `Option<`[`NewName`](super::NewName)`>`;
//!   default none).
//!
//! From that the macro makes the enum, `name`, `since`, `counted`,
//! `bytes`, `reach`, `makes`, the arguments as written, the reading of one
//! operation's arguments, and [`NAMES`](super::NAMES).

macro_rules! operations {
    (@or [$e:expr] $default:expr) => {
        $e
    };
    (@or [] $default:expr) => {
        $default
    };
    (@first $first:literal $(, $rest:literal)*) => {
        $first
    };
    (
        $(
            $(#[$doc:meta])*
            $variant:ident [$($name:literal),+] since $since:literal {
                $(
                    $(#[$fdoc:meta])*
                    $field:ident @ $pos:literal : $ty:ty as $kind:ty
                ),+ $(,)?
            }
            $(counted($counted:expr))?
            $(moves($moves:expr))?
            $(reaches($reaches:expr))?
            $(makes($makes:expr))?
        ;)+
    ) => {
        /// One operation: each variant is an entry of the table in
        /// `format/ops.rs`, which says how it is read, written and counted.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum OpKind {
            $(
                $(#[$doc])*
                $variant {
                    $( $(#[$fdoc])* $field: $ty, )+
                },
            )+
        }

        /// Every operation's name as a trace spells it, in the table's order.
        pub const NAMES: &[&str] = &[$($($name),+),+];

        impl OpKind {
            /// The operation's name, as the trace spells it and reports count it.
            pub fn name(&self) -> &'static str {
                match self {
                    $(
                        OpKind::$variant { $($field),+ } => {
                            let call: Option<&'static str> =
                                None $( .or(<$kind as Arg>::op_name($field)) )+;
                            call.unwrap_or(operations!(@first $($name),+))
                        }
                    )+
                }
            }

            /// The first trace version that holds the operation.
            pub fn since(&self) -> u32 {
                match self {
                    $( OpKind::$variant { .. } => $since, )+
                }
            }

            /// True for the operations of the program's own (an implicit
            /// open or an inherited descriptor is the kernel's, and is not
            /// counted).
            #[allow(unused_variables)]
            pub fn counted(&self) -> bool {
                match self {
                    $(
                        OpKind::$variant { $($field),+ } => {
                            operations!(@or [$($counted)?] true)
                        }
                    )+
                }
            }

            /// Bytes the operation reads or writes.
            #[allow(unused_variables)]
            pub fn bytes(&self) -> u64 {
                match self {
                    $(
                        OpKind::$variant { $($field),+ } => operations!(@or [$($moves)?] 0),
                    )+
                }
            }

            /// How the operation can make a file larger, if it can.
            #[allow(unused_variables)]
            pub fn reach(&self) -> Option<Reach> {
                match self {
                    $(
                        OpKind::$variant { $($field),+ } => {
                            operations!(@or [$(Some($reaches))?] None)
                        }
                    )+
                }
            }

            /// The name the operation may make, if it may make one.
            #[allow(unused_variables)]
            pub fn makes(&self) -> Option<NewName> {
                match self {
                    $(
                        OpKind::$variant { $($field),+ } => operations!(@or [$($makes)?] None),
                    )+
                }
            }

            /// The arguments as the trace writes them (after the name).
            pub(super) fn args(&self) -> String {
                let mut words: [Option<String>; 9] = Default::default();
                match self {
                    $(
                        OpKind::$variant { $($field),+ } => {
                            $( words[$pos] = <$kind as Arg>::text($field); )+
                        }
                    )+
                }
                let written: Vec<String> = words.into_iter().skip(5).flatten().collect();
                written.join(" ")
            }

            /// Reads the arguments of the operation `name` (fields in the
            /// table's order); gives it with its first version and the
            /// number of arguments it takes.
            pub(super) fn parse_args(
                name: &str,
                a: &mut Args,
            ) -> Result<(OpKind, u32, usize), ParseError> {
                match name {
                    $(
                        $($name)|+ => {
                            let names: &[&'static str] = &[$($name),+];
                            a.name = names.iter().copied().find(|n| *n == name).unwrap_or(names[0]);
                            let mut arity = 0;
                            $(
                                let $field = <$kind as Arg>::parse(a, $pos)?;
                                if $pos >= 5 && (!<$kind as Arg>::OPTIONAL || a.words.len() > $pos) {
                                    arity += 1;
                                }
                            )+
                            Ok((OpKind::$variant { $($field),+ }, $since, arity))
                        }
                    )+
                    other => Err(ParseError::UnknownOp(shown(other))),
                }
            }
        }
    };
}
