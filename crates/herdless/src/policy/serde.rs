//! Serde support (feature `serde`): policies in configuration files.
//!
//! [`Policy`] serializes to a map of its fields (eight, and `attempt_timeout`
//! when it is set), durations in human form
//! (`"500ms"`, `"30s"`, `"1m 30s"`) and the jitter mode by name (`"full"`,
//! `"decorrelated-window"`). Deserializing goes through [`PolicyBuilder`]:
//! a missing field takes its default, an unknown field is refused, and an
//! invalid value is an error naming the field (`invalid cap: 1s is below base
//! 5s`), never a silently clamped value. A duration may also be written as a
//! number of seconds (`1.5`).
//!
//! ```
//! use std::time::Duration;
//! use herdless::{Jitter, Policy};
//!
//! let p: Policy = serde_json::from_str(r#"{"base": "250ms", "cap": "2m", "jitter": "equal"}"#)?;
//! assert_eq!(p.base(), Duration::from_millis(250));
//! assert_eq!(p.jitter(), Jitter::Equal);
//! assert_eq!(p.max_attempts(), Policy::DEFAULT_MAX_ATTEMPTS);
//! assert_eq!(serde_json::from_str::<Policy>(&serde_json::to_string(&p)?)?, p);
//!
//! let err = serde_json::from_str::<Policy>(r#"{"base": "5s", "cap": "1s"}"#).unwrap_err();
//! assert!(err.to_string().starts_with("invalid cap: 1s is below base 5s"));
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! [`PolicyConfig`] is the partial form (every field optional), for layering
//! a file under flags; [`parse_duration`] and [`duration`] are the duration
//! syntax on its own, for a configuration's other keys.

use std::fmt;
use std::time::Duration;

use ::serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use ::serde::ser::{SerializeStruct, Serializer};
use ::serde::{Deserialize, Serialize};

use super::{Jitter, Policy, PolicyBuilder, PolicyError, PolicyField};

pub(crate) mod fields;
pub(crate) mod values;

pub use values::{ParseDurationError, duration, format_duration, parse_duration};

/// A partial policy: each field set or left to the layer below. Deserializes
/// from the same map as [`Policy`] (each value checked on its own: a zero
/// `max_attempts` is refused here), and [`build`](Self::build)s into a
/// [`Policy`] through [`PolicyBuilder`] (which adds the rule across fields).
///
/// ```
/// use std::time::Duration;
/// use herdless::policy::serde::PolicyConfig;
///
/// let file: PolicyConfig = toml::from_str("cap = \"2m\"\nmax_attempts = 8\n")?;
/// assert_eq!(file.cap, Some(Duration::from_secs(120)));
/// assert_eq!(file.base, None);
/// let policy = file.apply(herdless::Policy::builder().max_attempts(3)).build()?;
/// assert_eq!(policy.max_attempts(), 8); // the file's layer wins over the builder's
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct PolicyConfig {
    /// `jitter`, by name.
    pub jitter: Option<Jitter>,
    /// `base`
    pub base: Option<Duration>,
    /// `multiplier`
    pub multiplier: Option<f64>,
    /// `cap`
    pub cap: Option<Duration>,
    /// `max_attempts`
    pub max_attempts: Option<u32>,
    /// `max_elapsed`
    pub max_elapsed: Option<Duration>,
    /// `max_retry_after`
    pub max_retry_after: Option<Duration>,
    /// `retry_after_spread`
    pub retry_after_spread: Option<f64>,
    /// `attempt_timeout`
    pub attempt_timeout: Option<Duration>,
    /// `max_requeues`
    pub max_requeues: Option<u32>,
}

impl PolicyConfig {
    /// Deserializes `value` as `field` and checks it on its own (everything
    /// [`PolicyBuilder::build`] checks except a cap below the base). Errors
    /// start with `invalid FIELD: `.
    ///
    /// ```
    /// use herdless::policy::serde::PolicyConfig;
    /// use herdless::policy::PolicyField;
    /// use serde::de::{value::{Error, StrDeserializer}, IntoDeserializer};
    ///
    /// let mut c = PolicyConfig::default();
    /// let v: StrDeserializer<'_, Error> = "90s".into_deserializer();
    /// c.set(PolicyField::MaxElapsed, v)?;
    /// assert_eq!(c.max_elapsed, Some(std::time::Duration::from_secs(90)));
    /// let zero: StrDeserializer<'_, Error> = "0s".into_deserializer();
    /// let err = c.set(PolicyField::MaxElapsed, zero).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid max_elapsed: must be greater than zero");
    /// # Ok::<(), Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The value has the wrong kind or syntax, or is invalid for the field.
    pub fn set<'de, D: Deserializer<'de>>(
        &mut self,
        field: PolicyField,
        value: D,
    ) -> Result<(), D::Error> {
        use values::{Human, JitterName, Number, Whole};
        let name = field.as_str();
        let mut alone = PolicyBuilder::new();
        match field {
            PolicyField::Jitter => {
                self.jitter = Some(value.deserialize_any(JitterName(name))?);
                return Ok(());
            }
            PolicyField::Multiplier => {
                let x = value.deserialize_any(Number(name))?;
                (self.multiplier, alone.multiplier) = (Some(x), x);
            }
            PolicyField::RetryAfterSpread => {
                let x = value.deserialize_any(Number(name))?;
                (self.retry_after_spread, alone.retry_after_spread) = (Some(x), x);
            }
            PolicyField::MaxAttempts => {
                let n = value.deserialize_any(Whole(name, u32::MAX.into()))? as u32;
                (self.max_attempts, alone.max_attempts) = (Some(n), n);
            }
            PolicyField::MaxRequeues => {
                let n = value.deserialize_any(Whole(name, u32::MAX.into()))? as u32;
                (self.max_requeues, alone.max_requeues) = (Some(n), n);
            }
            PolicyField::AttemptTimeout => {
                let d = value.deserialize_any(Human(name))?;
                (self.attempt_timeout, alone.attempt_timeout) = (Some(d), Some(d));
            }
            PolicyField::Base
            | PolicyField::Cap
            | PolicyField::MaxElapsed
            | PolicyField::MaxRetryAfter => {
                let d = value.deserialize_any(Human(name))?;
                let (slot, into) = match field {
                    PolicyField::Base => (&mut self.base, &mut alone.base),
                    PolicyField::Cap => (&mut self.cap, &mut alone.cap),
                    PolicyField::MaxElapsed => (&mut self.max_elapsed, &mut alone.max_elapsed),
                    _ => (&mut self.max_retry_after, &mut alone.max_retry_after),
                };
                (*slot, *into) = (Some(d), d);
            }
        }
        alone.check_alone(field).map_err(de::Error::custom)
    }

    /// Sets on `builder` every field this configuration holds.
    ///
    /// ```
    /// use herdless::{policy::serde::PolicyConfig, Policy};
    /// let mut c = PolicyConfig::default();
    /// c.max_attempts = Some(2);
    /// assert_eq!(c.apply(Policy::builder()).build()?.max_attempts(), 2);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn apply(&self, builder: PolicyBuilder) -> PolicyBuilder {
        let mut b = builder;
        b.jitter = self.jitter.unwrap_or(b.jitter);
        b.base = self.base.unwrap_or(b.base);
        b.multiplier = self.multiplier.unwrap_or(b.multiplier);
        b.cap = self.cap.unwrap_or(b.cap);
        b.max_attempts = self.max_attempts.unwrap_or(b.max_attempts);
        b.max_elapsed = self.max_elapsed.unwrap_or(b.max_elapsed);
        b.max_retry_after = self.max_retry_after.unwrap_or(b.max_retry_after);
        b.retry_after_spread = self.retry_after_spread.unwrap_or(b.retry_after_spread);
        b.attempt_timeout = self.attempt_timeout.or(b.attempt_timeout);
        b.max_requeues = self.max_requeues.unwrap_or(b.max_requeues);
        b
    }

    /// Builds the policy: these fields over the defaults.
    ///
    /// # Errors
    ///
    /// As [`PolicyBuilder::build`].
    ///
    /// ```
    /// let c = herdless::policy::serde::PolicyConfig::default();
    /// assert_eq!(c.build()?, herdless::Policy::default());
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn build(&self) -> Result<Policy, PolicyError> {
        self.apply(PolicyBuilder::new()).build()
    }
}

impl From<&Policy> for PolicyConfig {
    /// Every field set, from `policy` (`attempt_timeout` when it has one,
    /// `max_requeues` when it is not the default).
    ///
    /// ```
    /// use herdless::{policy::serde::PolicyConfig, Policy};
    /// let p = Policy::default();
    /// assert_eq!(PolicyConfig::from(&p).build()?, p);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    fn from(p: &Policy) -> Self {
        PolicyConfig {
            jitter: Some(p.jitter()),
            base: Some(p.base()),
            multiplier: Some(p.multiplier()),
            cap: Some(p.cap()),
            max_attempts: Some(p.max_attempts()),
            max_elapsed: Some(p.max_elapsed()),
            max_retry_after: Some(p.max_retry_after()),
            retry_after_spread: Some(p.retry_after_spread()),
            attempt_timeout: p.attempt_timeout(),
            max_requeues: (p.max_requeues() != Policy::DEFAULT_MAX_REQUEUES)
                .then(|| p.max_requeues()),
        }
    }
}

impl Serialize for PolicyConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let d = |d: Option<Duration>| d.map(format_duration);
        let fields: [(&str, Option<Value>); 10] = [
            ("jitter", self.jitter.map(|j| Value::Str(j.name().into()))),
            ("base", d(self.base).map(Value::Str)),
            ("multiplier", self.multiplier.map(Value::F64)),
            ("cap", d(self.cap).map(Value::Str)),
            ("max_attempts", self.max_attempts.map(Value::U32)),
            ("max_elapsed", d(self.max_elapsed).map(Value::Str)),
            ("max_retry_after", d(self.max_retry_after).map(Value::Str)),
            (
                "retry_after_spread",
                self.retry_after_spread.map(Value::F64),
            ),
            ("attempt_timeout", d(self.attempt_timeout).map(Value::Str)),
            ("max_requeues", self.max_requeues.map(Value::U32)),
        ];
        let len = fields.iter().filter(|(_, v)| v.is_some()).count();
        let mut st = s.serialize_struct("Policy", len)?;
        for (name, value) in fields {
            match value {
                Some(v) => st.serialize_field(name, &v)?,
                None => st.skip_field(name)?,
            }
        }
        st.end()
    }
}

enum Value {
    Str(String),
    F64(f64),
    U32(u32),
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Str(v) => s.serialize_str(v),
            Value::F64(v) => s.serialize_f64(*v),
            Value::U32(v) => s.serialize_u32(*v),
        }
    }
}

const FIELDS: &[&str] = &[
    "jitter",
    "base",
    "multiplier",
    "cap",
    "max_attempts",
    "max_elapsed",
    "max_retry_after",
    "retry_after_spread",
    "attempt_timeout",
    "max_requeues",
];

impl<'de> Deserialize<'de> for PolicyConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = PolicyConfig;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a retry policy (a map of its fields)")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PolicyConfig, A::Error> {
                let mut config = PolicyConfig::default();
                fields::visit_fields(map, FIELDS, |name, map| {
                    let field: PolicyField = name
                        .parse()
                        .map_err(|_| de::Error::unknown_field(name, FIELDS))?;
                    map.next_value_seed(Field(&mut config, field))
                })?;
                Ok(config)
            }
        }
        d.deserialize_struct("Policy", FIELDS, Fields)
    }
}

struct Field<'a>(&'a mut PolicyConfig, PolicyField);

impl<'de> DeserializeSeed<'de> for Field<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.0.set(self.1, d)
    }
}

impl Serialize for Policy {
    /// Every field (`attempt_timeout` only when set, `max_requeues` only when
    /// not the default), durations in human form.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PolicyConfig::from(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Policy {
    /// Missing fields take the defaults; the result is validated by
    /// [`PolicyBuilder::build`].
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        PolicyConfig::deserialize(d)?
            .build()
            .map_err(de::Error::custom)
    }
}

impl Serialize for Jitter {
    /// The mode's [name](Jitter::name).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Jitter {
    /// A mode by [name](Jitter::name).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(values::JitterName(""))
    }
}
