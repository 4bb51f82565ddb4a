//! Typed params, results and building blocks of revision 2026-07-28, named as
//! in the schema so each can be tested against `examples/<Type>/`.
//!
//! Every object type keeps the members it does not model in `extra`, so a
//! value read and written again loses nothing. Unions that have a
//! discriminator (`type`, `method`, `mode`, `resultType`) are read by it, and
//! an unknown discriminator is kept as an `Unknown` value rather than refused.

mod apps;
mod capabilities;
mod common;
mod completion;
mod content;
mod discover;
mod elicitation;
mod input;
mod notifications;
mod prompts;
mod resources;
mod roots;
mod sampling;
mod skills;
mod subscriptions;
mod tasks;
mod tools;

pub use apps::*;
pub use capabilities::*;
pub use common::*;
pub use completion::*;
pub use content::*;
pub use discover::*;
pub use elicitation::*;
pub use input::*;
pub use notifications::*;
pub use prompts::*;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use skills::*;
pub use subscriptions::*;
pub use tasks::*;
pub use tools::*;
