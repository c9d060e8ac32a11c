//! Reading a map of named settings: unknown and repeated keys refused, each
//! value read by its field's visitor (so an error names the field). Shared by
//! every settings type with serde support (policy, retry budget, breaker).

use ::serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

/// A visitor used as a seed: `map.next_value_seed(Seed(Number("spread")))`.
pub(crate) struct Seed<V>(pub(crate) V);

impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for Seed<V> {
    type Value = V::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        d.deserialize_any(self.0)
    }
}

/// Reads every entry of `map`: `set(name, map)` reads the value of the key
/// `name` (one of `fields`). An unknown key is refused with the list of
/// fields, a repeated one as a duplicate.
pub(crate) fn visit_fields<'de, A: MapAccess<'de>>(
    mut map: A,
    fields: &'static [&'static str],
    mut set: impl FnMut(&'static str, &mut A) -> Result<(), A::Error>,
) -> Result<(), A::Error> {
    let mut seen: Vec<&'static str> = Vec::new();
    while let Some(key) = map.next_key::<String>()? {
        let Some(&name) = fields.iter().find(|f| **f == key) else {
            return Err(de::Error::unknown_field(&key, fields));
        };
        if seen.contains(&name) {
            return Err(de::Error::duplicate_field(name));
        }
        seen.push(name);
        set(name, &mut map)?;
    }
    Ok(())
}
