//! One folder per subcommand; only [`crate::cli`] imports them, and none
//! imports another (what two of them share is in [`crate::shared`]).

pub(crate) mod analyze;
pub(crate) mod check;
pub(crate) mod exec;
pub(crate) mod fence;
pub(crate) mod fleet;
pub(crate) mod get;
pub(crate) mod simulate;
pub(crate) mod stub;
pub(crate) mod tune;
pub(crate) mod worker;
