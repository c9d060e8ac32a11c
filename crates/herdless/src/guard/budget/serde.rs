//! Retry budget settings in configuration files (feature `serde`).
//!
//! A map of the builder's knobs, in tokens: `max_tokens`, `initial_tokens`,
//! `failure_cost`, `retry_cost`, `timeout_cost`, `success_refund`,
//! `threshold`, `spread` (numbers) and `refund_retry_cost` (true or false),
//! over a `preset` (`"grpc"`, the default: gRPC retry throttling for 10
//! tokens and a 0.1 ratio; or `"aws"`: the AWS SDKs' retry quota). The preset
//! applies first, whatever the order of the keys; each knob given then
//! replaces the preset's. Deserializing a [`RetryBudget`] goes through
//! [`RetryBudgetBuilder::build`]: an unknown key is refused, an invalid value
//! is an error naming the knob, never adjusted.
//!
//! A [`RetryBudget`] serializes its settings (every knob but the preset and
//! the initial level); its level is runtime state, and a deserialized budget
//! starts full unless `initial_tokens` says otherwise.

use ::serde::de::{self, Deserializer, MapAccess, Visitor};
use ::serde::ser::{SerializeStruct, Serializer};
use ::serde::{Deserialize, Serialize};

use super::{RetryBudget, RetryBudgetBuilder, SCALE};
use crate::policy::serde::fields::{Seed, visit_fields};
use crate::policy::serde::values::{Choice, Flag, Number};

const FIELDS: &[&str] = &[
    "preset",
    "max_tokens",
    "initial_tokens",
    "failure_cost",
    "retry_cost",
    "timeout_cost",
    "success_refund",
    "refund_retry_cost",
    "threshold",
    "spread",
];

/// The knobs a setting sets on the builder.
type Knob = fn(RetryBudgetBuilder, f64) -> RetryBudgetBuilder;

fn knob(name: &str) -> Option<Knob> {
    Some(match name {
        "max_tokens" => RetryBudgetBuilder::max_tokens,
        "initial_tokens" => RetryBudgetBuilder::initial_tokens,
        "failure_cost" => RetryBudgetBuilder::failure_cost,
        "retry_cost" => RetryBudgetBuilder::retry_cost,
        "timeout_cost" => RetryBudgetBuilder::timeout_cost,
        "success_refund" => RetryBudgetBuilder::success_refund,
        "threshold" => RetryBudgetBuilder::threshold,
        "spread" => RetryBudgetBuilder::spread,
        _ => return None,
    })
}

impl<'de> Deserialize<'de> for RetryBudgetBuilder {
    /// The preset, then the knobs given; each value checked for its kind only
    /// ([`RetryBudgetBuilder::build`] checks the ranges).
    ///
    /// ```
    /// use herdless::guard::RetryBudgetBuilder;
    /// let b: RetryBudgetBuilder = toml::from_str("max_tokens = 100\npreset = \"aws\"")?;
    /// assert_eq!(b.build().unwrap().max_tokens(), 100.0); // the AWS quota, resized
    /// # Ok::<(), toml::de::Error>(())
    /// ```
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Settings;
        impl<'de> Visitor<'de> for Settings {
            type Value = RetryBudgetBuilder;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("retry budget settings (a map of its knobs)")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RetryBudgetBuilder, A::Error> {
                let mut preset = "grpc";
                let mut knobs: Vec<(Knob, f64)> = Vec::new();
                let mut refund: Option<bool> = None;
                visit_fields(map, FIELDS, |name, map| {
                    match (name, knob(name)) {
                        ("preset", _) => {
                            preset = map.next_value_seed(Seed(Choice(name, &["grpc", "aws"])))?;
                        }
                        ("refund_retry_cost", _) => {
                            refund = Some(map.next_value_seed(Seed(Flag(name)))?);
                        }
                        (_, Some(set)) => {
                            knobs.push((set, map.next_value_seed(Seed(Number(name)))?))
                        }
                        (_, None) => return Err(de::Error::unknown_field(name, FIELDS)),
                    }
                    Ok(())
                })?;
                let mut b = match preset {
                    "aws" => RetryBudgetBuilder::new().aws(),
                    _ => RetryBudgetBuilder::new(),
                };
                for (set, value) in knobs {
                    b = set(b, value);
                }
                if let Some(on) = refund {
                    b = b.refund_retry_cost(on);
                }
                Ok(b)
            }
        }
        d.deserialize_struct("RetryBudget", FIELDS, Settings)
    }
}

impl<'de> Deserialize<'de> for RetryBudget {
    /// A full budget with these settings, validated by
    /// [`RetryBudgetBuilder::build`].
    ///
    /// ```
    /// use herdless::RetryBudget;
    /// let b: RetryBudget = toml::from_str("preset = \"aws\"\nmax_tokens = 50")?;
    /// assert_eq!((b.max_tokens(), b.tokens()), (50.0, 50.0));
    /// let err = toml::from_str::<RetryBudget>("max_tokens = 0").unwrap_err();
    /// assert!(err.message().starts_with("invalid retry budget max_tokens: must be positive"));
    /// # Ok::<(), toml::de::Error>(())
    /// ```
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RetryBudgetBuilder::deserialize(d)?
            .build()
            .map_err(de::Error::custom)
    }
}

impl Serialize for RetryBudget {
    /// Its settings: every knob, in tokens (not the level).
    ///
    /// ```
    /// let json = serde_json::to_string(&herdless::RetryBudget::aws())?;
    /// assert_eq!(json, r#"{"max_tokens":500.0,"failure_cost":0.0,"retry_cost":5.0,"timeout_cost":10.0,"success_refund":1.0,"refund_retry_cost":true,"threshold":0.0,"spread":250.0}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = &self.cfg;
        let tokens = |v: u64| v as f64 / SCALE;
        let mut st = s.serialize_struct("RetryBudget", 8)?;
        st.serialize_field("max_tokens", &tokens(c.max))?;
        st.serialize_field("failure_cost", &tokens(c.failure_cost))?;
        st.serialize_field("retry_cost", &tokens(c.retry_cost))?;
        st.serialize_field("timeout_cost", &tokens(c.timeout_cost))?;
        st.serialize_field("success_refund", &tokens(c.success_refund))?;
        st.serialize_field("refund_retry_cost", &c.refund_retry_cost)?;
        st.serialize_field("threshold", &tokens(c.threshold))?;
        st.serialize_field("spread", &tokens(c.spread))?;
        st.end()
    }
}
