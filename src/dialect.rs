//! Which producer wrote a log, told from its header line and its type vocabulary.

use std::fmt;

use crate::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// A pi session file: a tree of entries (`message`, `model_change`, ...), no streaming.
    PiSession,
    /// pi `--mode json`, old generation (0.73): `message_update` carries whole snapshots.
    PiStreamOld,
    /// pi `--mode json`, new generation (1.6): `message_update` carries only the delta.
    PiStreamNew,
    /// pi `--mode json` with no `message_update` to tell the generation by.
    PiStream,
    /// A DeepSeek Harness session log (`assistant/chunk`, `turn/start`, packed rows, ...).
    Dsh,
    /// A durable op list: one batch of Chord ops per line.
    OpList,
    /// Anything else: plain JSONL.
    Unknown,
}

impl Dialect {
    pub fn name(self) -> &'static str {
        match self {
            Dialect::PiSession => "pi-session",
            Dialect::PiStreamOld => "pi-stream-old",
            Dialect::PiStreamNew => "pi-stream-new",
            Dialect::PiStream => "pi-stream",
            Dialect::Dsh => "dsh",
            Dialect::OpList => "op-list",
            Dialect::Unknown => "unknown",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Dialect::PiSession => "pi session file",
            Dialect::PiStreamOld => "pi --mode json stream, old generation (snapshot updates)",
            Dialect::PiStreamNew => "pi --mode json stream, new generation (delta updates)",
            Dialect::PiStream => "pi --mode json stream",
            Dialect::Dsh => "DeepSeek Harness session log",
            Dialect::OpList => "op list (Chord batches)",
            Dialect::Unknown => "unknown JSONL",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Watches lines go by and decides the dialect at the end. Cheap: it looks at the header
/// and at most one field of a few event types.
#[derive(Debug, Default)]
pub struct Sniffer {
    lines: u64,
    dsh_header: bool,
    pi_header: bool,
    pi_stream_types: bool,
    pi_session_types: bool,
    dsh_types: bool,
    old_update: bool,
    new_update: bool,
    op_batches: u64,
}

/// Types only pi `--mode json` writes.
const PI_STREAM_TYPES: &[&str] = &[
    "agent_start",
    "agent_end",
    "agent_settled",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
];

/// Types only pi session files hold.
const PI_SESSION_TYPES: &[&str] = &[
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "label",
];

impl Sniffer {
    /// `kind` is the line's top-level `type`, if it has one.
    pub fn observe(&mut self, line: &[u8], kind: Option<&str>) {
        self.lines += 1;
        match kind {
            Some("session") if self.lines == 1 => {
                if is_dsh_header(line) {
                    self.dsh_header = true;
                } else {
                    self.pi_header = true;
                }
            }
            Some("message_update") if !self.old_update && !self.new_update => {
                if json::field(line, "message").is_some() {
                    self.old_update = true;
                } else {
                    self.new_update = true;
                }
            }
            Some("agent_settled") => self.new_update = true,
            Some(t) if PI_STREAM_TYPES.contains(&t) => self.pi_stream_types = true,
            Some(t) if PI_SESSION_TYPES.contains(&t) => self.pi_session_types = true,
            Some(t) if t.contains('/') || t.ends_with("-chunks") => self.dsh_types = true,
            None if is_op_batch(line) => self.op_batches += 1,
            _ => {}
        }
        if matches!(kind, Some("message_update")) {
            self.pi_stream_types = true;
        }
    }

    pub fn finish(&self) -> Dialect {
        if self.dsh_header || (self.dsh_types && !self.pi_header) {
            Dialect::Dsh
        } else if self.old_update {
            Dialect::PiStreamOld
        } else if self.new_update {
            Dialect::PiStreamNew
        } else if self.pi_stream_types {
            Dialect::PiStream
        } else if self.pi_header || self.pi_session_types {
            Dialect::PiSession
        } else if self.lines > 0 && self.op_batches == self.lines {
            Dialect::OpList
        } else {
            Dialect::Unknown
        }
    }
}

/// DSH's header has `delegationDepth` and version 0; pi's has version 3 (or none).
fn is_dsh_header(line: &[u8]) -> bool {
    json::field(line, "delegationDepth").is_some() || json::field(line, "version") == Some(b"0")
}

/// The dialect as far as one line tells it on its own: a header, or a type only one
/// producer writes. Streaming commands decide with this on the first telling line.
pub fn early(line: &[u8], kind: Option<&str>) -> Option<Dialect> {
    match kind? {
        "session" if is_dsh_header(line) => Some(Dialect::Dsh),
        "session" => Some(Dialect::PiStream),
        t if PI_STREAM_TYPES.contains(&t) => Some(Dialect::PiStream),
        t if t.contains('/') || t.ends_with("-chunks") => Some(Dialect::Dsh),
        _ => None,
    }
}

/// A bare `WireOp[]` batch or a `{"seq":..,"ops":[..]}` record.
fn is_op_batch(line: &[u8]) -> bool {
    let i = json::skip_ws(line, 0);
    match line.get(i) {
        Some(b'[') => true,
        Some(b'{') => json::field(line, "ops")
            .or_else(|| json::field(line, "value"))
            .is_some_and(|v| v.starts_with(b"[")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniff(lines: &[&str]) -> Dialect {
        let mut s = Sniffer::default();
        for l in lines {
            let kind = json::field(l.as_bytes(), "type").and_then(json::str_value);
            s.observe(l.as_bytes(), kind.as_deref());
        }
        s.finish()
    }

    #[test]
    fn tells_dialects_apart() {
        let pi = r#"{"type":"session","version":3,"id":"x"}"#;
        assert_eq!(
            sniff(&[
                pi,
                r#"{"type":"message_update","message":{},"assistantMessageEvent":{}}"#
            ]),
            Dialect::PiStreamOld
        );
        assert_eq!(
            sniff(&[
                pi,
                r#"{"type":"message_update","usage":{},"assistantMessageEvent":{}}"#
            ]),
            Dialect::PiStreamNew
        );
        assert_eq!(sniff(&[pi, r#"{"type":"turn_start"}"#]), Dialect::PiStream);
        assert_eq!(
            sniff(&[
                r#"{"type":"session","id":"x"}"#,
                r#"{"type":"message","id":"a"}"#
            ]),
            Dialect::PiSession
        );
        assert_eq!(
            sniff(&[r#"{"type":"session","version":0,"delegationDepth":0}"#]),
            Dialect::Dsh
        );
        assert_eq!(sniff(&[r#"{"type":"turn/start","data":{}}"#]), Dialect::Dsh);
        assert_eq!(
            sniff(&[
                r#"{"seq":0,"tag":"base","ops":[["r",1]]}"#,
                r#"[["s",["a"],1]]"#
            ]),
            Dialect::OpList
        );
        assert_eq!(sniff(&[r#"{"a":1}"#]), Dialect::Unknown);
        assert_eq!(sniff(&[]), Dialect::Unknown);
    }
}
