//! Producers as data. A profile says, for one producer's log format, how its lines are
//! recognised, how an event's kind is read, and which kinds are frames (with their
//! successors and pairing keys), mirrors, boundaries (with their projections) and closers.
//! Everything else is a fact.
//!
//! The built-in profiles are the files in `profiles/` (see [`registry`]), in the same
//! format `--profile FILE` reads; `docs/FORMAT.md` ("Profile files") documents it. The
//! engine (the filter, the packer, stats) knows no producer's field names: it asks a
//! profile.

pub mod detect;
pub mod registry;
pub mod store;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::json;
pub use store::Store;

/// Durability classes.
///
/// - **fact**: durable; written always, byte for byte. Any kind a profile does not name.
/// - **frame**: a live snapshot or delta whose *successor* carries the same value, so a
///   reader that skips frames rebuilds the run exactly. Dropped unless opted in.
/// - **mirror**: a live duplicate of a durable event. Dropped unless opted in.
/// - **boundary**: durable, but projected so it stops repeating what it closes over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    Fact,
    Frame,
    Mirror,
    Boundary,
}

impl Class {
    pub const ALL: [Class; 4] = [Class::Fact, Class::Frame, Class::Mirror, Class::Boundary];

    pub fn name(self) -> &'static str {
        match self {
            Class::Fact => "fact",
            Class::Frame => "frame",
            Class::Mirror => "mirror",
            Class::Boundary => "boundary",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a frame carries the whole value so far (so the last one suffices) or a delta
/// (so a run without its successor must be kept whole).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Snapshot {
    Always,
    Never,
    /// A snapshot when any of these fields (dotted paths of keys) is present. The cheapest
    /// path to find goes first.
    #[serde(untagged)]
    IfAny(#[serde(deserialize_with = "one_or_many")] Vec<String>),
}

impl Snapshot {
    /// Whether `line` is a snapshot frame under this rule.
    pub fn holds(&self, line: &[u8]) -> bool {
        self.holds_in(&mut json::Lookup::new(line))
    }

    /// [`Snapshot::holds`] of the line of `look`.
    pub fn holds_in(&self, look: &mut json::Lookup<'_>) -> bool {
        match self {
            Snapshot::Always => true,
            Snapshot::Never => false,
            Snapshot::IfAny(paths) => paths.iter().any(|p| look.path(p).is_some()),
        }
    }
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

/// How a frame kind pairs with its successor.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameRule {
    /// The kind that carries the frames' value once the run is over. Without one, each
    /// frame is superseded by the next frame of its kind and key, and the last one of a run
    /// is the durable one: it is kept, where the input proves the run over (a frame of
    /// another key for an `exclusive` kind, an opener, a closer, the end).
    #[serde(default)]
    pub successor: Option<String>,
    /// A field (a dotted path) pairing frames with their successor. Without one, frames
    /// belong to the one open run of their kind.
    pub key: Option<String>,
    /// A kind that opens a new run, proving an open run of this kind will never get its
    /// successor.
    pub opener: Option<String>,
    #[serde(default = "never")]
    pub snapshot: Snapshot,
    /// At most one open run of this kind: a frame of another key ends the open run (its
    /// last frame is written, in place) before it starts its own.
    #[serde(default)]
    pub exclusive: bool,
    /// A line of this kind is a frame only when the value at this path is the same as in
    /// the previous line of its kind (a repeat); any other is a fact, and it is the
    /// successor that closes the repeats before it.
    #[serde(default)]
    pub repeats: Option<String>,
}

fn never() -> Snapshot {
    Snapshot::Never
}

impl FrameRule {
    /// The pairing key of a frame or a successor: the raw value of the key field (empty
    /// when absent), or `None` for a keyless rule.
    pub fn key_of(&self, line: &[u8]) -> Option<Vec<u8>> {
        self.key_in(&mut json::Lookup::new(line))
    }

    /// [`FrameRule::key_of`] the line of `look`.
    pub fn key_in(&self, look: &mut json::Lookup<'_>) -> Option<Vec<u8>> {
        key_at(self.key.as_deref(), look)
    }
}

/// The raw value at the dotted path `key` (empty when absent), or `None` without a key.
fn key_at(key: Option<&str>, look: &mut json::Lookup<'_>) -> Option<Vec<u8>> {
    key.map(|f| look.path(f).unwrap_or_default().to_vec())
}

/// Which lines of a kind in `snapshot_rows` make one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowRule {
    /// A field (a dotted path): lines of the kind with the same value make one run.
    /// Without one, consecutive lines of the kind do.
    pub key: Option<String>,
}

impl RowRule {
    /// The run a line belongs to: the raw value of the key field (empty when absent).
    pub fn key_of(&self, line: &[u8]) -> Option<Vec<u8>> {
        self.key_in(&mut json::Lookup::new(line))
    }

    /// [`RowRule::key_of`] the line of `look`.
    pub fn key_in(&self, look: &mut json::Lookup<'_>) -> Option<Vec<u8>> {
        key_at(self.key.as_deref(), look)
    }
}

/// How a boundary is projected: members replaced, counted or dropped; every other member
/// copied as it was spelled.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Projection {
    #[serde(default)]
    pub replace: Vec<Replace>,
    /// Drop every other member whose value is an object or an array (what a boundary named
    /// only by `--boundary` gets).
    #[serde(default)]
    pub scalars_only: bool,
}

/// What happens to one member of a projected boundary.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replace {
    /// The member, a dotted path: `data.normalizedMessages` replaces inside `data`.
    pub field: String,
    /// Replace it by its length (0 for anything but an array), under this name. When the
    /// member is absent, the count 0 is added after the other members.
    pub count: Option<String>,
    /// Replace it by some of its own members, renamed (`message` by `messageRole`).
    #[serde(default)]
    pub keep: Vec<Keep>,
    /// Drop it.
    #[serde(default)]
    pub drop: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keep {
    pub from: String,
    #[serde(rename = "as")]
    pub name: String,
}

/// Which text an opted-in frame keeps when it must be bounded.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounding {
    /// Strings under keys of these names, in document order, are the frame's text.
    #[serde(default = "default_text_keys")]
    pub text: Vec<String>,
    /// Look for the text only within the first of these members the frame has (a frame
    /// that carries its value twice needs only one copy); the whole frame when none.
    #[serde(default)]
    pub within: Vec<String>,
}

fn default_text_keys() -> Vec<String> {
    vec!["text".into()]
}

impl Default for Bounding {
    fn default() -> Bounding {
        Bounding {
            text: default_text_keys(),
            within: Vec::new(),
        }
    }
}

/// How an event's kind is read: a top-level field, refined for some (or all) of its values
/// by a second field, as `TOP:SUB` (Codex's `response_item:message`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindRule {
    #[serde(default = "default_kind_field")]
    pub field: String,
    #[serde(default)]
    pub sub: Sub,
    /// For a line without the kind field: the first of these top-level keys it has is its
    /// kind (Gemini CLI's `$set` and `$rewindTo` lines).
    #[serde(default)]
    pub markers: Vec<String>,
}

fn default_kind_field() -> String {
    "type".into()
}

impl Default for KindRule {
    fn default() -> KindRule {
        KindRule {
            field: default_kind_field(),
            sub: Sub::None,
            markers: Vec::new(),
        }
    }
}

/// The second field of a kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Sub {
    #[default]
    None,
    /// The same dotted path for every kind.
    All(String),
    /// A dotted path per top-level kind.
    Per(BTreeMap<String, String>),
}

/// A test on one line: its kind, fields it has or lacks, fields equal to a value.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// The line's top-level kind.
    pub kind: Option<String>,
    /// For a variant: the first line of this kind decides (later ones are not looked at).
    pub first: Option<String>,
    #[serde(default)]
    pub has: Vec<String>,
    #[serde(default)]
    pub lacks: Vec<String>,
    /// Fields (dotted paths) and the JSON values they must hold, compared as written
    /// (`{"version": 0}` matches `"version":0`).
    #[serde(default)]
    pub equals: BTreeMap<String, serde_json::Value>,
}

impl Condition {
    /// Whether `line`, of top-level kind `kind`, passes the field tests (not the kind).
    pub fn fields_hold(&self, line: &[u8]) -> bool {
        self.has.iter().all(|p| json::path(line, p).is_some())
            && self.lacks.iter().all(|p| json::path(line, p).is_none())
            && self.equals.iter().all(|(p, v)| {
                json::path(line, p).is_some_and(|raw| raw == v.to_string().as_bytes())
            })
    }

    pub fn holds(&self, line: &[u8], kind: Option<&str>) -> bool {
        let want = self.kind.as_deref().or(self.first.as_deref());
        want.is_none_or(|w| kind == Some(w)) && self.fields_hold(line)
    }
}

/// How a profile's logs are told from others (see [`detect`]).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recognise {
    /// First-line tests that decide at once.
    #[serde(default)]
    pub header: Vec<Condition>,
    /// First-line tests that only count as one vote (a header several producers share).
    #[serde(default)]
    pub header_hints: Vec<Condition>,
    /// Kinds only this producer writes: each line of one is a vote, and the first decides
    /// a stream.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// The same, as patterns where `*` stands for any text (`*/*`, `*-chunks`).
    #[serde(default)]
    pub kind_patterns: Vec<String>,
    /// File names (patterns, matched against the file name and, when they hold a `/`,
    /// the end of the path) that decide at once.
    #[serde(default)]
    pub files: Vec<String>,
    /// Formats this producer writes that are not JSONL (one JSON document over many
    /// lines), named so that sess can say what such a file probably is.
    #[serde(default)]
    pub documents: Vec<String>,
}

impl Recognise {
    /// Whether a line of this kind is a vote for the profile.
    pub fn votes_for(&self, kind: &str) -> bool {
        self.kinds.iter().any(|k| k == kind)
            || self.kind_patterns.iter().any(|p| detect::glob(p, kind))
    }
}

/// A named generation of a format, told by a condition on its lines.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    pub describe: String,
    pub when: Condition,
}

/// One producer's log format.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    /// Where it comes from: `built-in`, or the path of its file.
    pub origin: String,
    pub describe: String,
    /// The producer versions this profile was checked against.
    pub checked: Vec<String>,
    pub recognise: Recognise,
    /// The name `stats` gives the format when no variant matches.
    pub dialect: String,
    /// Where the producer's version is written (dotted paths, tried in order on the first
    /// lines that have one).
    pub version: Vec<String>,
    pub variants: Vec<Variant>,
    pub kind: KindRule,
    pub frames: BTreeMap<String, FrameRule>,
    /// Kinds that are no frames but repeat a growing value (a subagent's history on every
    /// step): `sess pack` writes a run of them as a snapshot-delta row, as it does for
    /// snapshot frames. Their class is unchanged.
    pub snapshot_rows: BTreeMap<String, RowRule>,
    pub mirrors: BTreeSet<String>,
    pub boundaries: BTreeMap<String, Projection>,
    /// Lines that end every open run without a successor.
    pub closers: Vec<Condition>,
    pub bound: Bounding,
    /// Kinds this profile knows, of any class: `stats` lists the others as unknown.
    pub known: BTreeSet<String>,
    /// Where its logs live on disk.
    pub store: Store,
}

/// A profile file, as written (see `docs/FORMAT.md`, "Profile files").
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: Option<String>,
    describe: Option<String>,
    #[serde(default)]
    checked: Vec<String>,
    /// A built-in profile to start from.
    extends: Option<String>,
    recognise: Option<Recognise>,
    dialect: Option<String>,
    #[serde(default)]
    version: Vec<String>,
    #[serde(default)]
    variants: Vec<Variant>,
    kind: Option<KindRule>,
    #[serde(default)]
    frames: BTreeMap<String, FrameRule>,
    #[serde(default)]
    snapshot_rows: BTreeMap<String, RowRule>,
    #[serde(default)]
    mirrors: Vec<String>,
    #[serde(default)]
    boundaries: Boundaries,
    #[serde(default)]
    closers: Vec<CloserSpec>,
    #[serde(default)]
    facts: Vec<String>,
    /// Kinds that are facts and known (so `stats` does not call them unknown).
    #[serde(default)]
    known: Vec<String>,
    bound: Option<Bounding>,
    store: Option<Store>,
}

/// A closer: a kind, or a test on the line (its kind compared as the profile reads kinds).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum CloserSpec {
    Kind(String),
    Test(Condition),
}

/// Boundaries with their projections, or (older files) a list of kinds that keep only
/// their scalar members.
#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum Boundaries {
    #[default]
    None,
    Projected(BTreeMap<String, Projection>),
    Listed(Vec<String>),
}

impl Profile {
    /// Whether any kind of this profile can be packed as snapshot rows: when none can (DSH),
    /// the packer need not read a line's kind at all.
    pub fn packs_snapshots(&self) -> bool {
        !self.snapshot_rows.is_empty()
            || self
                .frames
                .values()
                .any(|r| !matches!(r.snapshot, Snapshot::Never))
    }

    /// Every kind a fact; nothing filtered.
    pub fn none() -> Profile {
        Profile {
            name: "none".into(),
            origin: "built-in".into(),
            describe: "no producer: every line is a fact".into(),
            checked: Vec::new(),
            recognise: Recognise::default(),
            dialect: "unknown".into(),
            version: Vec::new(),
            variants: Vec::new(),
            kind: KindRule::default(),
            frames: BTreeMap::new(),
            snapshot_rows: BTreeMap::new(),
            mirrors: BTreeSet::new(),
            boundaries: BTreeMap::new(),
            closers: Vec::new(),
            bound: Bounding::default(),
            known: BTreeSet::new(),
            store: Store::default(),
        }
    }

    /// Reads a profile from JSON text. `origin` names it in messages (a path, or the
    /// built-in's name); it is also the profile's name when the file gives none.
    pub fn from_json(text: &[u8], origin: &str) -> Result<Profile> {
        Profile::from_json_over(text, origin, registry::all())
    }

    /// [`Profile::from_json`], with `extends` looked up in `bases`.
    pub fn from_json_over(text: &[u8], origin: &str, bases: &[Profile]) -> Result<Profile> {
        let file: ProfileFile = serde_json::from_slice(text)
            .map_err(|e| Error::Profile(format!("{origin}: not a valid profile file: {e}")))?;
        let own = matches!(file.extends.as_deref(), None | Some("none"));
        let mut p = match file.extends.as_deref() {
            None | Some("none") => Profile::none(),
            Some(base) => bases
                .iter()
                .find(|p| p.name == base)
                .cloned()
                .ok_or_else(|| {
                    let names: Vec<&str> = bases.iter().map(|p| p.name.as_str()).collect();
                    Error::Profile(format!(
                        "{origin}: unknown profile to extend: '{base}' (one of: {}, none)",
                        names.join(", ")
                    ))
                })?,
        };
        p.name = file.name.unwrap_or_else(|| origin.to_string());
        p.origin = origin.to_string();
        if let Some(d) = file.describe {
            p.describe = d;
        }
        p.checked.extend(file.checked);
        if let Some(r) = file.recognise {
            p.recognise = r;
        }
        // A producer of its own is named in `stats` by its name, not as `unknown` (none's).
        match file.dialect {
            Some(d) => p.dialect = d,
            None if own => p.dialect = p.name.clone(),
            None => {}
        }
        if !file.version.is_empty() {
            p.version = file.version;
        }
        if !file.variants.is_empty() {
            p.variants = file.variants;
        }
        if let Some(k) = file.kind {
            p.kind = k;
        }
        if let Some(b) = file.bound {
            p.bound = b;
        }
        if let Some(st) = file.store {
            p.store = st;
        }
        for (t, rule) in file.frames {
            p.add_frame(&t, rule);
        }
        for t in &file.mirrors {
            p.add_mirror(t);
        }
        p.snapshot_rows.extend(file.snapshot_rows);
        match file.boundaries {
            Boundaries::None => {}
            Boundaries::Projected(m) => {
                for (t, proj) in m {
                    p.set_fact(&t);
                    p.known.insert(t.clone());
                    p.boundaries.insert(t, proj);
                }
            }
            Boundaries::Listed(v) => {
                for t in &v {
                    p.add_boundary(t);
                }
            }
        }
        for c in file.closers {
            let c = match c {
                CloserSpec::Kind(k) => Condition {
                    kind: Some(k),
                    ..Condition::default()
                },
                CloserSpec::Test(c) => c,
            };
            if let Some(k) = &c.kind {
                p.known.insert(k.clone());
            }
            p.closers.push(c);
        }
        for t in &file.facts {
            p.set_fact(t);
        }
        p.known.extend(file.known);
        // The kinds it is recognised by are kinds it knows.
        let vocabulary = p.recognise.kinds.iter().cloned();
        let headers = (p.recognise.header.iter().chain(&p.recognise.header_hints))
            .filter_map(|c| c.kind.clone());
        p.known
            .extend(vocabulary.chain(headers).collect::<Vec<_>>());
        p.check()?;
        Ok(p)
    }

    /// Reads a profile file.
    pub fn from_file(path: &Path) -> Result<Profile> {
        let text = std::fs::read(path).map_err(|e| {
            Error::Profile(format!("{}: cannot read the profile: {e}", path.display()))
        })?;
        Profile::from_json(&text, &path.display().to_string())
    }

    /// Refuses a profile whose rules contradict each other.
    fn check(&self) -> Result<()> {
        match self.contradiction() {
            Some(why) => Err(Error::Profile(format!("profile {}: {why}", self.name))),
            None => Ok(()),
        }
    }

    /// How the profile's rules contradict each other, if they do.
    fn contradiction(&self) -> Option<String> {
        self.frames.iter().find_map(|(t, rule)| {
            let succ = rule.successor.as_ref()?;
            // A conditional frame's successor is its own kind, when it is no repeat.
            let own = rule.repeats.is_some() && succ == t;
            (!own && (self.frames.contains_key(succ) || self.mirrors.contains(succ))).then(|| {
                format!(
                    "the successor of frame '{t}' ('{succ}') must be a fact or a boundary, not \
                     a frame or mirror"
                )
            })
        })
    }

    /// The kind of a line, as this profile reads it: the top-level field, refined by the
    /// sub-field when the profile says so (`TOP:SUB`). `None` when the line has no string
    /// kind field.
    pub fn kind_of<'a>(&self, line: &'a [u8]) -> Option<Cow<'a, str>> {
        self.kind_in(&mut json::Lookup::new(line))
    }

    /// [`Profile::kind_of`] the line of `look`.
    pub fn kind_in<'a>(&self, look: &mut json::Lookup<'a>) -> Option<Cow<'a, str>> {
        match look.field(&self.kind.field).and_then(json::str_value) {
            Some(top) => Some(self.refine_in(look, top)),
            None => self.marker_kind(look.line()),
        }
    }

    /// The kind of a line without the kind field, from the marker keys it has.
    pub fn marker_kind<'a>(&self, line: &[u8]) -> Option<Cow<'a, str>> {
        if self.kind.markers.is_empty() {
            return None;
        }
        let first = json::members(line)
            .find_map(|(k, _)| self.kind.markers.iter().find(|m| json::key_is(k, m)))?;
        Some(Cow::Owned(first.clone()))
    }

    /// The kind of a line whose kind field has been read already (`top`).
    pub fn refine_kind<'a>(&self, line: &'a [u8], top: Cow<'a, str>) -> Cow<'a, str> {
        self.refine_in(&mut json::Lookup::new(line), top)
    }

    fn refine_in<'a>(&self, look: &mut json::Lookup<'a>, top: Cow<'a, str>) -> Cow<'a, str> {
        let path = match &self.kind.sub {
            Sub::None => return top,
            Sub::All(p) => p.as_str(),
            Sub::Per(m) => match m.get(top.as_ref()) {
                Some(p) => p.as_str(),
                None => return top,
            },
        };
        match look.path(path).and_then(json::str_value) {
            Some(sub) => Cow::Owned(format!("{top}:{sub}")),
            None => top,
        }
    }

    pub fn classify(&self, kind: Option<&str>) -> Class {
        let Some(t) = kind else { return Class::Fact };
        if self.frames.contains_key(t) {
            Class::Frame
        } else if self.mirrors.contains(t) {
            Class::Mirror
        } else if self.boundaries.contains_key(t) {
            Class::Boundary
        } else {
            Class::Fact
        }
    }

    /// Whether the profile names this kind (in any class, or as known).
    pub fn knows(&self, kind: &str) -> bool {
        self.known.contains(kind) || self.classify(Some(kind)) != Class::Fact
    }

    /// Makes `t` a fact, whatever it was.
    pub fn set_fact(&mut self, t: &str) {
        self.frames.remove(t);
        self.mirrors.remove(t);
        self.boundaries.remove(t);
        self.known.insert(t.to_string());
    }

    pub fn add_frame(&mut self, t: &str, rule: FrameRule) {
        self.set_fact(t);
        self.known.extend(rule.successor.clone());
        if let Some(o) = &rule.opener {
            self.known.insert(o.clone());
        }
        self.frames.insert(t.to_string(), rule);
    }

    /// Adds `--frame TYPE=SUCCESSOR`: a keyless delta frame (kept whole when orphaned).
    pub fn add_frame_flag(&mut self, spec: &str) -> Result<()> {
        let bad = || Error::Profile(format!("--frame expects TYPE=SUCCESSOR, got '{spec}'"));
        let (t, succ) = spec.split_once('=').ok_or_else(bad)?;
        if t.is_empty() || succ.is_empty() {
            return Err(bad());
        }
        let rule = FrameRule {
            successor: Some(succ.to_string()),
            key: None,
            opener: None,
            snapshot: Snapshot::Never,
            exclusive: false,
            repeats: None,
        };
        self.add_frame(t, rule);
        Ok(())
    }

    /// Makes `t` a boundary: with the projection the profile defines for it, or keeping
    /// only its scalar members.
    pub fn add_boundary(&mut self, t: &str) {
        let projection = self.boundaries.get(t).cloned().unwrap_or(Projection {
            replace: Vec::new(),
            scalars_only: true,
        });
        self.set_fact(t);
        self.boundaries.insert(t.to_string(), projection);
    }

    pub fn add_mirror(&mut self, t: &str) {
        self.set_fact(t);
        self.mirrors.insert(t.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_pi_kinds() {
        let pi = registry::builtin("pi").unwrap();
        let cases = [
            ("message_update", Class::Frame),
            ("tool_execution_update", Class::Frame),
            ("turn_end", Class::Boundary),
            ("agent_end", Class::Boundary),
            ("message_end", Class::Fact),
            ("message_start", Class::Fact),
            ("tool_execution_start", Class::Fact),
            ("tool_execution_end", Class::Fact),
            ("bash_execution_update", Class::Fact),
            ("agent_settled", Class::Fact),
            ("session", Class::Fact),
            ("something_new", Class::Fact),
        ];
        for (t, c) in cases {
            assert_eq!(pi.classify(Some(t)), c, "{t}");
        }
        assert_eq!(pi.classify(None), Class::Fact);
        let dsh = registry::builtin("dsh").unwrap();
        assert_eq!(dsh.classify(Some("agent/stream-chunk")), Class::Mirror);
        assert_eq!(dsh.classify(Some("assistant/chunk")), Class::Fact);
    }

    #[test]
    fn every_frame_of_every_builtin_has_a_durable_successor() {
        for p in registry::all() {
            for (t, rule) in &p.frames {
                let Some(succ) = &rule.successor else {
                    continue;
                };
                let own = rule.repeats.is_some() && succ == t;
                assert!(
                    own || matches!(p.classify(Some(succ)), Class::Fact | Class::Boundary),
                    "{}: {succ}",
                    p.name,
                );
            }
        }
    }

    #[test]
    fn kinds_can_be_refined_by_a_second_field() {
        let p = Profile::from_json(
            br#"{"name":"t","kind":{"sub":{"event_msg":"payload.type"}}}"#,
            "test",
        )
        .unwrap();
        assert_eq!(
            p.kind_of(br#"{"type":"event_msg","payload":{"type":"token_count"}}"#)
                .as_deref(),
            Some("event_msg:token_count")
        );
        assert_eq!(
            p.kind_of(br#"{"type":"response_item","payload":{"type":"message"}}"#)
                .as_deref(),
            Some("response_item")
        );
        assert_eq!(
            p.kind_of(br#"{"type":"event_msg"}"#).as_deref(),
            Some("event_msg")
        );
        assert_eq!(p.kind_of(br#"{"kind":1}"#), None);
    }

    #[test]
    fn contradictions_and_unknown_keys_are_refused() {
        assert!(Profile::from_json(br#"{"frames":{"a":{"successor":"a"}}}"#, "t").is_err());
        assert!(Profile::from_json(br#"{"framez":{}}"#, "t").is_err());
        assert!(Profile::from_json(br#"{"extends":"nope"}"#, "t").is_err());
        let listed = Profile::from_json(br#"{"boundaries":["summary"]}"#, "t").unwrap();
        assert!(listed.boundaries["summary"].scalars_only);
    }
}

/// Which profile a command uses: one chosen on the command line, or `auto`, detected per
/// input from its first telling line.
#[derive(Debug, Clone)]
pub enum Choice {
    Auto,
    Fixed(Box<Profile>),
}

impl Choice {
    /// A fixed profile.
    pub fn fixed(p: Profile) -> Choice {
        Choice::Fixed(Box::new(p))
    }

    /// Whether `arg`, not being a profile's name, is taken for the path of a profile file.
    pub fn names_a_file(arg: &str) -> bool {
        Path::new(arg).exists() || arg.contains(['/', '.'])
    }

    /// `auto`, a built-in profile's name, `none`, or the path of a profile file.
    pub fn parse(arg: &str) -> Result<Choice> {
        Ok(match arg {
            "auto" => Choice::Auto,
            "none" => Choice::Fixed(Box::new(Profile::none())),
            name => match registry::builtin(name) {
                Some(p) => Choice::Fixed(Box::new(p)),
                None if Choice::names_a_file(name) => {
                    Choice::Fixed(Box::new(Profile::from_file(Path::new(name))?))
                }
                None => {
                    return Err(Error::Profile(format!(
                        "unknown profile '{name}': use auto, none, one of {}, or the path of a \
                         profile file",
                        registry::names().join(", ")
                    )));
                }
            },
        })
    }
}

/// Command-line changes to whichever profile is in force (`--frame`, `--mirror`,
/// `--boundary`, `--fact`).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub frames: Vec<String>,
    pub mirrors: Vec<String>,
    pub boundaries: Vec<String>,
    pub facts: Vec<String>,
}

impl Overrides {
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
            && self.mirrors.is_empty()
            && self.boundaries.is_empty()
            && self.facts.is_empty()
    }

    /// Applies them to `p`, then checks the profile they make: a `--frame` whose successor
    /// is a frame or a mirror, in `p` or by another flag, is refused, naming the flags.
    pub fn apply(&self, p: &mut Profile) -> Result<()> {
        for f in &self.frames {
            p.add_frame_flag(f)?;
        }
        for t in &self.mirrors {
            p.add_mirror(t);
        }
        for t in &self.boundaries {
            p.add_boundary(t);
        }
        for t in &self.facts {
            p.set_fact(t);
        }
        match p.contradiction() {
            Some(why) => Err(Error::Profile(format!(
                "--frame, --mirror, --boundary and --fact as given, with profile {}: {why}",
                p.name
            ))),
            None => Ok(()),
        }
    }
}

/// The profile in force for the input being read: fixed, or detected from the input's
/// lines, with the overrides applied. One per command; [`Chooser::start_input`] at each
/// input.
#[derive(Debug)]
pub struct Chooser {
    choice: Choice,
    overrides: Overrides,
    detector: Option<detect::Detector<'static>>,
    chosen: Option<Profile>,
    /// While an `auto` choice is undecided: `none` with the overrides, when there are any,
    /// so that the classes a user gives apply to a log no profile knows.
    fallback: Option<Profile>,
    /// The overrides contradicted a profile `auto` chose, and that was told (once: a
    /// thousand inputs said it a thousand times).
    told: std::cell::Cell<bool>,
}

impl Chooser {
    /// Fails when the overrides do not apply (a malformed `--frame`).
    pub fn new(choice: Choice, overrides: Overrides) -> Result<Chooser> {
        let mut fallback = Profile::none();
        overrides.apply(&mut fallback)?;
        // A profile given takes them once, here, where a contradiction is an error; one
        // `auto` chooses takes them when chosen.
        let choice = match choice {
            Choice::Fixed(mut p) => {
                overrides.apply(&mut p)?;
                Choice::Fixed(p)
            }
            Choice::Auto => Choice::Auto,
        };
        let mut c = Chooser {
            choice,
            fallback: (!overrides.is_empty()).then_some(fallback),
            overrides,
            detector: None,
            chosen: None,
            told: std::cell::Cell::new(false),
        };
        c.start_input(None);
        Ok(c)
    }

    /// A new input begins (`path` when it is a file): an `auto` choice detects again.
    pub fn start_input(&mut self, path: Option<&Path>) {
        self.chosen = None;
        self.detector = None;
        match &self.choice {
            Choice::Fixed(p) => self.chosen = Some((**p).clone()),
            Choice::Auto => {
                let d = detect::Detector::new(registry::all(), path);
                self.chosen = d.early().cloned().map(|p| self.with_overrides(p));
                if self.chosen.is_none() {
                    self.detector = Some(d);
                }
            }
        }
    }

    /// A profile `auto` chose, with the overrides.
    fn with_overrides(&self, mut p: Profile) -> Profile {
        // It may not fit them. Its contradiction loses nothing (a frame whose successor
        // never comes as a fact is kept whole), and is told of.
        if let Err(e) = self.overrides.apply(&mut p)
            && !self.told.replace(true)
        {
            crate::io::tell!("sess: warning: {e}");
        }
        p
    }

    /// The profile for this line and the ones after it; while undecided, `none` with the
    /// overrides, or `None` when there are none (the line is then a fact).
    pub fn see(&mut self, line: &[u8]) -> Option<&Profile> {
        if self.chosen.is_none()
            && let Some(d) = &mut self.detector
        {
            d.observe(line);
            if let Some(p) = d.early() {
                self.chosen = Some(self.with_overrides(p.clone()));
                self.detector = None;
            }
        }
        self.current()
    }

    /// The profile in force: the one decided, else the fallback ([`Chooser::see`]).
    pub fn current(&self) -> Option<&Profile> {
        self.chosen.as_ref().or(self.fallback.as_ref())
    }
}
