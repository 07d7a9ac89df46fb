//! No import circles: in each crate, the modules under one parent use
//! one another one way only. An import of `a::x::y` by `a::z::w` (by a
//! `crate::` or `super::` path, in a `use` or in the code) is an edge
//! `a::z -> a::x` between the two siblings under their closest common
//! parent; a circle of such edges is reported with the files that make
//! it. A module naming its own descendants (a parent declaring and
//! re-exporting its children) or its ancestors (a child using what its
//! parent holds) is no edge: a parent and its children are one unit.

use std::collections::{BTreeMap, BTreeSet};

use super::{Source, is_ident};

/// A module path (`["host", "membox"]`; the crate root is empty).
pub type Module = Vec<String>;

/// Every full path an import's rest spells: `a::b` gives `a::b`,
/// `a::{b, c::{self, d}}` gives `a::b`, `a::c` and `a::c::d`, `a::*`
/// gives `a::*`; an alias (`as x`) is dropped.
pub fn expand(rest: &str) -> Vec<Module> {
    let chars: Vec<char> = rest.chars().collect();
    let mut out = Vec::new();
    tree(&chars, &mut 0, &mut Vec::new(), &mut out);
    out
}

/// One use tree from `at`, below `prefix`.
fn tree(c: &[char], at: &mut usize, prefix: &mut Module, out: &mut Vec<Module>) {
    let depth = prefix.len();
    loop {
        while c.get(*at).is_some_and(|ch| ch.is_whitespace()) {
            *at += 1;
        }
        if c.get(*at) == Some(&'{') {
            *at += 1;
            group(c, at, prefix, out);
            break;
        }
        let start = *at;
        while c.get(*at).is_some_and(|&ch| is_ident(ch)) {
            *at += 1;
        }
        let word: String = c[start..*at].iter().collect();
        if word.is_empty() && c.get(*at) == Some(&'*') {
            *at += 1;
            prefix.push("*".into());
        } else if !word.is_empty() && word != "self" {
            prefix.push(word.clone());
        }
        if prefix.len() == depth || c.get(*at..*at + 2) != Some(&[':', ':']) {
            if !prefix.is_empty() {
                out.push(prefix.clone());
            }
            break;
        }
        *at += 2;
    }
    prefix.truncate(depth);
}

/// The trees of a `{...}` group, `at` just inside its `{`.
fn group(c: &[char], at: &mut usize, prefix: &mut Module, out: &mut Vec<Module>) {
    loop {
        tree(c, at, prefix, out);
        // Past an alias or anything else to the next `,` or the `}`.
        while c.get(*at).is_some_and(|&ch| ch != ',' && ch != '}') {
            *at += 1;
        }
        match c.get(*at) {
            Some(',') => *at += 1,
            Some(_) => {
                *at += 1;
                return;
            }
            None => return,
        }
        while c.get(*at).is_some_and(|ch| ch.is_whitespace()) {
            *at += 1;
        }
        if c.get(*at) == Some(&'}') {
            *at += 1;
            return;
        }
    }
}

/// The full paths one file names by `crate::` (not `$crate::` in a
/// macro's body: that is the file's own crate as well, and kept) and
/// by `super::` chains, from the crate's root.
pub fn named_paths(s: &Source) -> Vec<Module> {
    let text = s.code.join("\n");
    let mut paths = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if !before.is_some_and(is_ident) {
            paths.extend(expand(rest));
        }
    }
    let mut rest = text.as_str();
    while let Some(i) = rest.find("super::") {
        let before = rest[..i].chars().last();
        let mut tail = &rest[i..];
        let mut ups = 0;
        while let Some(t) = tail.strip_prefix("super::") {
            ups += 1;
            tail = t;
        }
        rest = tail;
        if before.is_some_and(|c| is_ident(c) || c == ':') || ups > s.module.len() {
            continue;
        }
        let base = &s.module[..s.module.len() - ups];
        for p in expand(tail) {
            paths.push(base.iter().cloned().chain(p).collect());
        }
    }
    paths
}

/// The crate's modules, and what each makes visible by `pub use`.
struct Crate<'a> {
    modules: BTreeMap<Module, &'a Source>,
    /// Per module: (the name, or `*` for a glob; the path it names).
    reexports: BTreeMap<Module, Vec<(String, Module)>>,
}

impl<'a> Crate<'a> {
    fn of(sources: &'a [Source]) -> Self {
        let modules = sources.iter().map(|s| (s.module.clone(), s)).collect();
        let reexports = sources
            .iter()
            .map(|s| (s.module.clone(), reexports(s)))
            .collect();
        Crate { modules, reexports }
    }

    /// The module a path names: its longest prefix that is a module.
    fn owner(&self, path: &[String]) -> Module {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|m| self.modules.contains_key(m))
            .unwrap_or_default()
    }

    /// The module that holds what a path names: its owner, or where
    /// the owner's `pub use` took the name from (`crate::Counter`, by
    /// the root's `pub use sched::*`, is `sched`'s where sched.rs
    /// defines it).
    fn resolve(&self, path: &[String], depth: usize) -> Module {
        let owner = self.owner(path);
        let Some(name) = path.get(owner.len()).filter(|_| depth < 8) else {
            return owner;
        };
        for (n, from) in self.reexports.get(&owner).into_iter().flatten() {
            if n == name {
                return self.resolve(from, depth + 1);
            }
            let defined = self.modules.get(from).is_some_and(|s| defines(s, name));
            if n == "*" && *from != owner && defined {
                let inner = [from.as_slice(), &path[owner.len()..]].concat();
                return self.resolve(&inner, depth + 1);
            }
        }
        owner
    }
}

/// What one module makes visible by `pub use` (or `pub(crate) use`):
/// (the name, or `*`; the path it names, from the crate's root).
fn reexports(s: &Source) -> Vec<(String, Module)> {
    let text = s.code.join("\n");
    let mut out = Vec::new();
    for (i, _) in text.match_indices("use ") {
        let head = text[..i].rsplit('\n').next().unwrap_or("").trim();
        if !(head == "pub" || head.starts_with("pub(")) {
            continue;
        }
        let rest = &text[i + "use ".len()..];
        let (base, rest) = match rest.strip_prefix("crate::") {
            Some(r) => (Vec::new(), r),
            None => {
                let mut r = rest.strip_prefix("self::").unwrap_or(rest);
                let mut ups = 0;
                while let Some(t) = r.strip_prefix("super::") {
                    ups += 1;
                    r = t;
                }
                let keep = s.module.len().saturating_sub(ups);
                (s.module[..keep].to_vec(), r)
            }
        };
        for p in expand(rest) {
            let full: Module = base.iter().cloned().chain(p).collect();
            if let Some((name, from)) = full.split_last() {
                let from = if name == "*" {
                    from.to_vec()
                } else {
                    full.clone()
                };
                out.push((name.clone(), from));
            }
        }
    }
    out
}

/// Whether a module's file defines an item `name` (not one a macro
/// makes: that stays its owner's).
fn defines(s: &Source, name: &str) -> bool {
    let text = s.code.join("\n");
    let kinds = [
        "struct", "enum", "fn", "const", "static", "type", "trait", "union", "mod",
    ];
    kinds.iter().any(|kind| {
        let at = format!("{kind} {name}");
        text.match_indices(&at).any(|(i, _)| {
            let after = text[i + at.len()..].chars().next();
            let before = text[..i].chars().last();
            !after.is_some_and(is_ident) && !before.is_some_and(is_ident)
        })
    })
}

/// The edges between siblings, each with the first file that makes it.
pub fn sibling_edges(sources: &[Source]) -> BTreeMap<(Module, Module), String> {
    let krate = Crate::of(sources);
    let mut edges = BTreeMap::new();
    for s in sources {
        for path in named_paths(s) {
            let to = krate.resolve(&path, 0);
            let common = s.module.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == s.module.len() || common == to.len() {
                continue; // itself, an ancestor or a descendant
            }
            let edge = (s.module[..=common].to_vec(), to[..=common].to_vec());
            edges.entry(edge).or_insert_with(|| s.rel.clone());
        }
    }
    edges
}

/// Every circle of the graph, one per set of modules that reach one
/// another (a shortest circle through its first module), as
/// `a::x -> a::y -> a::x`, each followed by the files that make its
/// edges.
pub fn circles(sources: &[Source]) -> Vec<String> {
    let edges = sibling_edges(sources);
    let mut next: BTreeMap<&Module, Vec<&Module>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        next.entry(a).or_default().push(b);
    }
    let reach = |from: &Module| -> BTreeMap<Module, Module> {
        // Breadth first: each module reached, with the one before it.
        let mut before = BTreeMap::new();
        let mut queue = vec![from.clone()];
        while !queue.is_empty() {
            let mut later = Vec::new();
            for m in queue {
                for &n in next.get(&m).into_iter().flatten() {
                    if !before.contains_key(n) {
                        before.insert(n.clone(), m.clone());
                        later.push(n.clone());
                    }
                }
            }
            queue = later;
        }
        before
    };
    let mut seen: BTreeSet<Module> = BTreeSet::new();
    let mut out = Vec::new();
    for start in next.keys() {
        if seen.contains(*start) {
            continue;
        }
        let before = reach(start);
        if !before.contains_key(*start) {
            continue;
        }
        // Walk back from the start to itself: the circle, reversed.
        let mut ring = vec![(*start).clone()];
        let mut at = before[*start].clone();
        while at != **start {
            ring.push(at.clone());
            at = before[&at].clone();
        }
        ring.push((*start).clone());
        ring.reverse();
        // The rest of its set is the same circle's business.
        seen.extend(
            before
                .keys()
                .filter(|m| reach(m).contains_key(*start))
                .cloned(),
        );
        let names: Vec<String> = ring.iter().map(|m| m.join("::")).collect();
        let mut text = names.join(" -> ");
        for (pair, to) in ring.windows(2).zip(&names[1..]) {
            let file = &edges[&(pair[0].clone(), pair[1].clone())];
            text.push_str(&format!("\n    {file} names {to}"));
        }
        out.push(text);
    }
    out
}

#[test]
fn the_circle_finder_catches_what_it_must() {
    let path = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        expand("a::{b, c::{self, d}, e as f, g::*}, h::i"),
        ["a::b", "a::c", "a::c::d", "a::e", "a::g::*"].map(path)
    );
    let fake = |rel: &str, code: &str| {
        let module = rel.trim_end_matches(".rs").trim_end_matches("/mod");
        Source {
            rel: rel.into(),
            module: module.split('/').map(str::to_string).collect(),
            code: code.lines().map(str::to_string).collect(),
        }
    };
    let super_climbs = fake("a/b/c.rs", "use super::super::{d::E, f};");
    assert_eq!(named_paths(&super_climbs), [path("a::d::E"), path("a::f")]);
    let sources = [
        // A parent naming its children and a child its parent: no edge.
        fake(
            "host/mod.rs",
            "pub mod membox;\npub use membox::MemBox;\nuse crate::host::swapfile::X;",
        ),
        fake(
            "host/membox.rs",
            "pub use crate::host::swapfile::{MIN_SWAP, Swapfile};\nuse super::Y;",
        ),
        fake(
            "host/swapfile.rs",
            "fn f() { crate::host::membox::owner_is_gone(x) }",
        ),
        // An edge into a child of a sibling is an edge to the sibling.
        fake(
            "analysis/attribution/mod.rs",
            "mod budget;\nuse super::MetricRow;",
        ),
        fake(
            "analysis/attribution/budget.rs",
            "use super::super::measures::{Measure, delays};",
        ),
        fake(
            "analysis/measures.rs",
            "use super::{attribution::budget::x, Change};",
        ),
        // Three round, and one way only beside them.
        fake("k/a.rs", "use crate::k::b::B;"),
        fake("k/b.rs", "use crate::{k::c, model::x};"),
        fake("k/c.rs", "use super::a::A;"),
        fake("k/d.rs", "use super::{a::A, b::B};"),
        fake("model/x.rs", ""),
    ];
    assert_eq!(
        circles(&sources),
        [
            "analysis::attribution -> analysis::measures -> analysis::attribution\n    \
             analysis/attribution/budget.rs names analysis::measures\n    \
             analysis/measures.rs names analysis::attribution",
            "host::membox -> host::swapfile -> host::membox\n    \
             host/membox.rs names host::swapfile\n    \
             host/swapfile.rs names host::membox",
            "k::a -> k::b -> k::c -> k::a\n    \
             k/a.rs names k::b\n    k/b.rs names k::c\n    k/c.rs names k::a",
        ]
    );
    // Opened: the shared piece moved down into a module of its own.
    let opened = [
        fake(
            "host/membox.rs",
            "use crate::host::{swapfile, owner::gone};",
        ),
        fake("host/swapfile.rs", "use super::owner::gone;"),
        fake("host/owner.rs", ""),
    ];
    assert_eq!(circles(&opened), Vec::<String>::new());
    assert_eq!(sibling_edges(&opened).len(), 3);
}
