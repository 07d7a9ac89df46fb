//! JSON for the typed keys of the analysis (measures, mechanisms,
//! budget components, settings, verdicts): each is written as
//! `{"id": "reclaim_stalls", "label": "reclaim stalls"}`, a stable
//! snake_case id from the variant's name for programs and the label the
//! text prints for people, so a relabel breaks no JSON reader
//! (`keyed!`). Types serialised as one of a fixed set of names (metric
//! ids) have `names_schema!`. Either schema lists every id or name, so
//! that a consumer knows each value a field can hold. The derived
//! schemas of the other types come from `#[derive(schemars::JsonSchema)]`
//! beside their `Serialize`.

use schemars::{Schema, json_schema};

/// A string that is one of `names`.
pub fn one_of_names(names: impl IntoIterator<Item = &'static str>) -> Schema {
    let names: Vec<&str> = names.into_iter().collect();
    json_schema!({ "type": "string", "enum": names })
}

/// A variant's name as a snake_case id: `MemcgStallP99` ->
/// `memcg_stall_p99`.
pub fn snake_id(variant: &str) -> String {
    let mut out = String::with_capacity(variant.len() + 4);
    let mut prev: Option<char> = None;
    for c in variant.chars() {
        if c.is_ascii_uppercase() {
            if prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit()) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
        prev = Some(c);
    }
    out
}

/// A typed key as JSON.
#[derive(serde::Serialize)]
pub struct KeyJson {
    pub id: String,
    pub label: &'static str,
}

/// An object of an `id` (one of `ids`) and a `label`.
pub fn keyed_object(ids: impl IntoIterator<Item = String>) -> Schema {
    let ids: Vec<String> = ids.into_iter().collect();
    json_schema!({
        "type": "object",
        "properties": {
            "id": { "type": "string", "enum": ids },
            "label": { "type": "string" }
        },
        "required": ["id", "label"],
        "additionalProperties": false
    })
}

/// `Serialize` and `schemars::JsonSchema` for a typed key:
/// `keyed!(Type, every variant (an iterator), its label (a fn))`. The id
/// is the variant's name in snake_case (its `Debug`), which the blessed
/// schema pins: renaming a variant shows there.
#[macro_export]
macro_rules! keyed {
    ($ty:ident, $all:expr, $label:expr) => {
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let label: fn($ty) -> &'static str = $label;
                serde::Serialize::serialize(
                    &$crate::schema::KeyJson {
                        id: $crate::schema::snake_id(&format!("{self:?}")),
                        label: label(*self),
                    },
                    s,
                )
            }
        }
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $crate::schema::keyed_object(
                    $all.map(|v: $ty| $crate::schema::snake_id(&format!("{v:?}"))),
                )
            }
        }
    };
}

/// Implements `schemars::JsonSchema` for a type serialised as a name:
/// `names_schema!(Type, expression yielding every name)`.
#[macro_export]
macro_rules! names_schema {
    ($ty:ident, $names:expr) => {
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $crate::schema::one_of_names($names)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_snake_case_variant_names() {
        assert_eq!(snake_id("MemcgStallP99"), "memcg_stall_p99");
        assert_eq!(snake_id("CpuContention"), "cpu_contention");
        assert_eq!(snake_id("OomKills"), "oom_kills");
        assert_eq!(snake_id("Steal"), "steal");
    }

    #[test]
    fn a_named_type_lists_every_name() {
        let s = one_of_names(["a", "b"]);
        assert_eq!(
            serde_json::to_value(&s).expect("a schema is JSON"),
            serde_json::json!({"type": "string", "enum": ["a", "b"]})
        );
    }
}
