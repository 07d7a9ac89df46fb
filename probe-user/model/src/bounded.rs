//! Bounds on a recording's free-form fields, checked while it is read:
//! a command line and a run's label are what a user typed, so a crafted
//! file could fill them with millions of tiny strings (each costs ~30
//! bytes of memory for 4 bytes of JSON: a 48 MB file of `"a",` took 785
//! MB) or one huge label that every CSV row repeats. Nothing vmtrace
//! writes comes near them: Linux caps one argument at 128 KiB
//! (MAX_ARG_STRLEN) and a whole command line at ARG_MAX (a quarter of
//! the stack limit, 2 MiB by default).

use serde::{
    Deserialize, Deserializer,
    de::{Error, SeqAccess, Visitor},
};

/// The most arguments a recorded command may have.
pub const MAX_ARGUMENTS: usize = 1 << 18;
/// The longest argument (MAX_ARG_STRLEN).
pub const MAX_ARGUMENT_BYTES: usize = 128 << 10;
/// The longest run label (a sweep value, a kernel and its patch).
pub const MAX_LABEL_BYTES: usize = 4096;

/// A command line of at most `MAX_ARGUMENTS` arguments of at most
/// `MAX_ARGUMENT_BYTES` each; more is an error naming the bound.
pub fn arguments<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct Arguments;
    impl<'de> Visitor<'de> for Arguments {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a command line (a list of strings)")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut out = Vec::new();
            while let Some(arg) = seq.next_element::<String>()? {
                if out.len() == MAX_ARGUMENTS {
                    return Err(A::Error::custom(format!(
                        "a command line of more than {MAX_ARGUMENTS} arguments"
                    )));
                }
                if arg.len() > MAX_ARGUMENT_BYTES {
                    return Err(A::Error::custom(format!(
                        "an argument longer than {MAX_ARGUMENT_BYTES} bytes"
                    )));
                }
                out.push(arg);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Arguments)
}

/// A run label of at most `MAX_LABEL_BYTES`.
pub fn label<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if s.len() > MAX_LABEL_BYTES {
        return Err(D::Error::custom(format!(
            "a run label longer than {MAX_LABEL_BYTES} bytes"
        )));
    }
    Ok(s)
}

/// `text` cut to at most `MAX_LABEL_BYTES` less 64 (room for `kernels`
/// to put a memory size before it), at a character boundary, marked
/// `...`: what vmtrace itself writes as a label.
pub fn cut_label(text: &str) -> String {
    const ROOM: usize = MAX_LABEL_BYTES - 64;
    if text.len() <= ROOM {
        return text.to_string();
    }
    let mut end = ROOM - 3;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Doc {
        #[serde(deserialize_with = "arguments")]
        args: Vec<String>,
        #[serde(deserialize_with = "label")]
        label: String,
    }

    #[test]
    fn command_lines_and_labels_past_their_bounds_are_refused() {
        let ok: Doc = serde_json::from_str(r#"{"args":["a","b"],"label":"-j5"}"#).expect("ok");
        assert_eq!((ok.args.len(), ok.label.as_str()), (2, "-j5"));
        let many = format!(
            r#"{{"args":[{}],"label":""}}"#,
            vec!["\"a\""; MAX_ARGUMENTS + 1].join(",")
        );
        let e = serde_json::from_str::<Doc>(&many).err().expect("too many");
        assert!(e.to_string().contains("more than 262144 arguments"), "{e}");
        let long = format!(
            r#"{{"args":[],"label":"{}"}}"#,
            "x".repeat(MAX_LABEL_BYTES + 1)
        );
        let e = serde_json::from_str::<Doc>(&long).err().expect("too long");
        assert!(e.to_string().contains("longer than 4096"), "{e}");
        let cut = cut_label(&"\u{e9}".repeat(MAX_LABEL_BYTES));
        assert!(cut.len() <= MAX_LABEL_BYTES - 64 && cut.ends_with("..."));
    }
}
