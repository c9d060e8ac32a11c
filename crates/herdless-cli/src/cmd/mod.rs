//! One folder per subcommand; only [`crate::cli`] imports them, and none
//! imports another (what two of them share is in [`crate::shared`]).

pub mod analyze;
pub mod check;
pub mod exec;
pub mod fleet;
pub mod get;
pub mod simulate;
pub mod stub;
pub mod tune;
pub mod worker;
