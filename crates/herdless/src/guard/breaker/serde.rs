//! Breaker settings in configuration files (feature `serde`): a map of
//! `threshold` (a whole number) and `probe_wait` (a human duration, `"1s"`,
//! or a number of seconds). Deserializing a [`Breaker`] goes through
//! [`BreakerBuilder::build`]: a missing setting takes its default, an unknown
//! one is refused, an invalid value is an error naming the setting.

use ::serde::de::{self, Deserializer, MapAccess, Visitor};
use ::serde::ser::{SerializeStruct, Serializer};
use ::serde::{Deserialize, Serialize};

use super::{Breaker, BreakerBuilder};
use crate::policy::serde::fields::{Seed, visit_fields};
use crate::policy::serde::format_duration;
use crate::policy::serde::values::{Human, Whole};

const FIELDS: &[&str] = &["threshold", "probe_wait"];

impl Serialize for BreakerBuilder {
    /// `threshold` and `probe_wait` (human form).
    ///
    /// ```
    /// let b = herdless::Breaker::builder().threshold(3);
    /// assert_eq!(serde_json::to_string(&b)?, r#"{"threshold":3,"probe_wait":"1s"}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Breaker", FIELDS.len())?;
        st.serialize_field("threshold", &self.threshold)?;
        st.serialize_field("probe_wait", &format_duration(self.probe_wait))?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for BreakerBuilder {
    /// The settings given, over the defaults; each value checked for its kind
    /// only ([`BreakerBuilder::build`] checks the ranges).
    ///
    /// ```
    /// use herdless::guard::breaker::BreakerBuilder;
    /// let b: BreakerBuilder = toml::from_str("probe_wait = \"250ms\"")?;
    /// assert_eq!(b, BreakerBuilder::new().probe_wait(std::time::Duration::from_millis(250)));
    /// # Ok::<(), toml::de::Error>(())
    /// ```
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Settings;
        impl<'de> Visitor<'de> for Settings {
            type Value = BreakerBuilder;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("breaker settings (a map of threshold and probe_wait)")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BreakerBuilder, A::Error> {
                let mut b = BreakerBuilder::new();
                visit_fields(map, FIELDS, |name, map| {
                    match name {
                        "threshold" => {
                            let n = map.next_value_seed(Seed(Whole(name, u32::MAX.into())))?;
                            b.threshold = n as u32;
                        }
                        _ => b.probe_wait = map.next_value_seed(Seed(Human(name)))?,
                    }
                    Ok(())
                })?;
                Ok(b)
            }
        }
        d.deserialize_struct("Breaker", FIELDS, Settings)
    }
}

impl Serialize for Breaker {
    /// Its settings (not its state: the failure count and the probe are
    /// runtime).
    ///
    /// ```
    /// let b = herdless::Breaker::new(4);
    /// assert_eq!(serde_json::to_string(&b)?, r#"{"threshold":4,"probe_wait":"1s"}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        BreakerBuilder::from(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Breaker {
    /// A closed breaker with these settings, validated by
    /// [`BreakerBuilder::build`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::Breaker;
    /// let b: Breaker = toml::from_str("threshold = 3\nprobe_wait = \"200ms\"")?;
    /// assert_eq!((b.threshold(), b.probe_wait_time()), (3, Duration::from_millis(200)));
    /// let err = toml::from_str::<Breaker>("threshold = 0").unwrap_err();
    /// assert!(err.message().starts_with("invalid breaker threshold: must be at least 1"));
    /// # Ok::<(), toml::de::Error>(())
    /// ```
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        BreakerBuilder::deserialize(d)?
            .build()
            .map_err(de::Error::custom)
    }
}
