//! Named steps (version 3): which operations begin one, and the names.

use super::error::{shown, StepError};

/// Most step names a trace may have.
pub const MAX_STEPS: usize = 256;

/// Named steps (version 3): which operations begin one, and the names.
/// A step takes in the operations of its thread from the one that begins
/// it up to the next one of that thread that begins a step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Steps {
    /// Step names, indexed by step id, in the order of first use.
    pub names: Vec<String>,
    /// (operation index, step id) of every operation that begins a step,
    /// in operation order.
    pub starts: Vec<(u32, u16)>,
}

impl Steps {
    /// Marks operation `op` (later than any marked before) as the start
    /// of a step called `name` (see [`Steps::id`]).
    pub fn mark(&mut self, op: u32, name: &str) -> Result<(), StepError> {
        let id = self.id(name)?;
        if self.starts.last().is_some_and(|(at, _)| *at >= op) {
            return Err(StepError::Order);
        }
        self.starts.push((op, id));
        Ok(())
    }

    /// The id of the step called `name`, a new one the first time: 1 to
    /// 32 letters, digits, `_`, `-` or `.`, at most [`MAX_STEPS`]
    /// different names.
    pub fn id(&mut self, name: &str) -> Result<u16, StepError> {
        if let Some(id) = self.names.iter().position(|n| n == name) {
            // Below MAX_STEPS, hence a u16.
            return Ok(id as u16);
        }
        let ok = (1..=32).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if !ok {
            return Err(StepError::Name(shown(name)));
        }
        if self.names.len() >= MAX_STEPS {
            return Err(StepError::TooMany);
        }
        self.names.push(name.to_string());
        Ok((self.names.len() - 1) as u16)
    }

    /// The name of step `id`.
    pub fn name(&self, id: u16) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }
}
