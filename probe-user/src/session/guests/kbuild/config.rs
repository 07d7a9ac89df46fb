//! The guest kernel's configuration: vmtrace's fragment
//! (`vmtrace-guest.config`, the one file that decides it), written out
//! for `scripts/kconfig/merge_config.sh`, and checked against the
//! `.config` that `make olddefconfig` left: every option the fragment
//! asks for either kept its value, or is named, with what the tree did
//! to it.

use std::{
    collections::{HashMap, HashSet},
    path::Path,
};

/// The fragment, as kept in the project.
pub const FRAGMENT: &str = include_str!("vmtrace-guest.config");

/// One option the fragment asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Want {
    /// `CONFIG_BPF_SYSCALL`.
    pub name: String,
    /// `y`, `n`, or a string/number value as written.
    pub value: String,
    /// The fragment's note on the trees that have it (`since 6.11`,
    /// `until 6.14`): a tree without the option is told, not warned.
    pub note: Option<String>,
}

/// The options of a fragment, in order; comments and blank lines
/// skipped, a trailing `# note` kept as the option's note.
pub fn parse(fragment: &str) -> Vec<Want> {
    fragment
        .lines()
        .filter_map(|line| {
            let (body, note) = match line.split_once('#') {
                Some((b, n)) => (b.trim(), Some(n.trim())),
                None => (line.trim(), None),
            };
            let (name, value) = body.split_once('=')?;
            let name = name.trim();
            if !name.starts_with("CONFIG_") {
                return None;
            }
            Some(Want {
                name: name.to_string(),
                value: value.trim().to_string(),
                note: note.filter(|n| !n.is_empty()).map(str::to_string),
            })
        })
        .collect()
}

/// The fragment as merge_config.sh reads it: one `CONFIG_X=v` per line,
/// `n` written as Kconfig writes it (`# CONFIG_X is not set`), notes
/// dropped (Kconfig would read them as part of the value).
pub fn merge_input(wants: &[Want]) -> String {
    let mut out = String::new();
    for w in wants {
        if w.value == "n" {
            out.push_str(&format!("# {} is not set\n", w.name));
        } else {
            out.push_str(&format!("{}={}\n", w.name, w.value));
        }
    }
    out
}

/// A `.config`'s values: `CONFIG_X=v`, and `# CONFIG_X is not set` as
/// `n`.
pub fn parse_dotconfig(text: &str) -> HashMap<String, String> {
    let mut values = HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ")
            && let Some(name) = rest.strip_suffix(" is not set")
            && name.starts_with("CONFIG_")
        {
            values.insert(name.to_string(), "n".to_string());
        } else if let Some((name, value)) = line.split_once('=')
            && name.starts_with("CONFIG_")
        {
            values.insert(name.to_string(), value.to_string());
        }
    }
    values
}

/// An option that did not come out as the fragment asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    pub name: String,
    pub wanted: String,
    /// What the `.config` has (None: the option is not in it at all).
    pub got: Option<String>,
    /// Whether the tree's Kconfig files know the option at all.
    pub known: bool,
    pub note: Option<String>,
}

impl Missing {
    /// Whether this is expected of an older or newer tree (the option is
    /// unknown there and the fragment says it comes or goes with a
    /// version): told as a notice, not a warning.
    pub fn expected(&self) -> bool {
        !self.known && self.note.is_some()
    }

    /// One line naming the option and what happened to it.
    pub fn describe(&self) -> String {
        let asked = format!("{}={}", self.name, self.wanted);
        match (self.known, &self.got, &self.note) {
            (false, _, Some(note)) => {
                format!("{asked}: not in this tree ({note}), left out")
            }
            (false, _, None) => format!("{asked}: this tree's Kconfig has no such option"),
            (true, Some(got), _) => format!(
                "{asked}: olddefconfig made it {got} (a dependency is off or the \
                 option cannot be built in)"
            ),
            (true, None, _) => format!(
                "{asked}: olddefconfig left it out (a dependency is off, or it \
                 cannot be set on this architecture)"
            ),
        }
    }
}

/// The fragment's options the `.config` does not have as asked. An
/// option asked `n` that is absent from the `.config` is as asked
/// (Kconfig omits options whose menu is off).
pub fn check(
    wants: &[Want],
    dotconfig: &HashMap<String, String>,
    known: &HashSet<String>,
) -> Vec<Missing> {
    wants
        .iter()
        .filter_map(|w| {
            let got = dotconfig.get(&w.name);
            let kept = match got {
                Some(v) => *v == w.value,
                None => w.value == "n",
            };
            (!kept).then(|| Missing {
                name: w.name.clone(),
                wanted: w.value.clone(),
                got: got.cloned(),
                known: known.contains(w.name.trim_start_matches("CONFIG_")),
                note: w.note.clone(),
            })
        })
        .collect()
}

/// The option names a tree's Kconfig files define (`config X`,
/// `menuconfig X`), without the CONFIG_ prefix.
pub fn known_symbols(src: &Path) -> HashSet<String> {
    let mut names = HashSet::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(kind) = e.file_type() else { continue };
            let name = e.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() && !name.starts_with('.') {
                stack.push(e.path());
            } else if kind.is_file() && name.starts_with("Kconfig") {
                let Ok(text) = std::fs::read_to_string(e.path()) else {
                    continue;
                };
                names.extend(symbols_of(&text));
            }
        }
    }
    names
}

/// The symbols one Kconfig file defines.
fn symbols_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines().filter_map(|l| {
        let l = l.trim_start();
        let rest = l
            .strip_prefix("config ")
            .or_else(|| l.strip_prefix("menuconfig "))?;
        let name = rest.split_whitespace().next()?;
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
            .then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_projects_fragment_asks_for_what_vmtrace_needs() {
        let wants = parse(FRAGMENT);
        let asked = |n: &str, v: &str| wants.iter().any(|w| w.name == n && w.value == v);
        for need in [
            "CONFIG_BPF_SYSCALL",
            "CONFIG_BPF_JIT",
            "CONFIG_DEBUG_INFO_BTF",
            "CONFIG_KPROBES",
            "CONFIG_MEMCG",
            "CONFIG_SWAP",
            "CONFIG_ZSWAP",
            "CONFIG_ZRAM",
            "CONFIG_TRANSPARENT_HUGEPAGE",
            "CONFIG_COMPACTION",
            "CONFIG_NUMA",
            "CONFIG_LRU_GEN",
            "CONFIG_PSI",
            "CONFIG_TASK_DELAY_ACCT",
            "CONFIG_SCHEDSTATS",
            "CONFIG_VIRTIO_BLK",
            "CONFIG_9P_FS",
            "CONFIG_EXT4_FS",
            "CONFIG_OVERLAY_FS",
            "CONFIG_SERIAL_8250_CONSOLE",
        ] {
            assert!(asked(need, "y"), "{need}=y missing from the fragment");
        }
        // Nothing as a module: the guest loads none for a built kernel.
        // MODULES itself is on: 6.1's BPF_JIT and KPROBES depend on it.
        assert!(asked("CONFIG_MODULES", "y"));
        assert!(wants.iter().all(|w| w.value != "m"));
        // Notes are kept apart from values.
        let v1 = wants
            .iter()
            .find(|w| w.name == "CONFIG_MEMCG_V1")
            .expect("v1");
        assert_eq!(v1.value, "y");
        assert_eq!(v1.note.as_deref(), Some("since 6.11"));
        // Each option once.
        let mut names: Vec<&str> = wants.iter().map(|w| w.name.as_str()).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "an option is asked twice");
    }

    #[test]
    fn merge_input_is_plain_kconfig() {
        let wants = parse("CONFIG_A=y # since 9.9\n# comment\nCONFIG_B=n\nCONFIG_C=\"x\"\nnoise\n");
        assert_eq!(
            merge_input(&wants),
            "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"x\"\n"
        );
    }

    /// A merge as olddefconfig leaves it: one option kept, one dropped by
    /// a dependency, one the tree does not know (with and without a
    /// version note), one asked off and absent.
    #[test]
    fn check_names_each_option_that_did_not_survive() {
        let wants = parse(
            "CONFIG_KEPT=y\nCONFIG_DROPPED=y\nCONFIG_NEWER=y # since 6.11\n\
             CONFIG_TYPO=y\nCONFIG_OFF=n\nCONFIG_MODULAR=y\n",
        );
        let dotconfig =
            parse_dotconfig("CONFIG_KEPT=y\n# CONFIG_DROPPED is not set\nCONFIG_MODULAR=m\n");
        let known: HashSet<String> = ["KEPT", "DROPPED", "OFF", "MODULAR"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let missing = check(&wants, &dotconfig, &known);
        let names: Vec<&str> = missing.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "CONFIG_DROPPED",
                "CONFIG_NEWER",
                "CONFIG_TYPO",
                "CONFIG_MODULAR"
            ]
        );
        assert!(missing[0].describe().contains("made it n"));
        assert!(missing[1].expected());
        assert!(
            missing[1]
                .describe()
                .contains("not in this tree (since 6.11)")
        );
        assert!(!missing[2].expected());
        assert!(missing[2].describe().contains("no such option"));
        assert_eq!(missing[3].got.as_deref(), Some("m"));
    }

    #[test]
    fn kconfig_symbols_are_read_from_the_tree() {
        let dir = std::env::temp_dir().join(format!("vmtrace-kconfig-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("mm")).expect("mkdir");
        std::fs::write(
            dir.join("mm/Kconfig"),
            "menuconfig SWAP\n\tbool \"swap\"\nconfig ZSWAP\n\tdepends on SWAP\n  # config NOT_ME\n",
        )
        .expect("write");
        std::fs::write(dir.join("Kconfig.debug"), "config DEBUG_INFO_BTF\n").expect("write");
        let known = known_symbols(&dir);
        for n in ["SWAP", "ZSWAP", "DEBUG_INFO_BTF"] {
            assert!(known.contains(n), "{n}");
        }
        assert!(!known.contains("NOT_ME"));
        std::fs::remove_dir_all(&dir).expect("rm");
    }
}
