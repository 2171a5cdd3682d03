//! A Claude Code transcript in the shape its users report (anthropics/claude-code #18905,
//! #19040): subagents whose `agent_progress` records store the subagent's whole history
//! again in `data.normalizedMessages` on every step, the subagent prompt repeated on each,
//! `bash_progress` records carrying the cumulative output, hook progress, and
//! `file-history-snapshot` updates that grow. Every record is in the `uuid`/`parentUuid`
//! tree, progress included, as Claude Code 2.0-2.1 writes it.

use std::io;

use super::{Out, Rng, js, text_of};

const VERSION: &str = "2.1.39";

struct Tree {
    rng: Rng,
    session: String,
    parent: Option<String>,
    ts: u64,
}

impl Tree {
    fn uuid(&mut self) -> String {
        let (a, b) = (self.rng.next(), self.rng.next());
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            b >> 52,
            b & 0xffff_ffff_ffff
        )
    }

    fn stamp(&mut self) -> String {
        self.ts += self.rng.range(20, 900);
        let s = self.ts / 1000;
        format!(
            "2026-02-12T{:02}:{:02}:{:02}.{:03}Z",
            (s / 3600) % 24,
            (s / 60) % 60,
            s % 60,
            self.ts % 1000
        )
    }

    /// The envelope every record in the tree carries; `uuid` becomes the next parent.
    fn envelope(&mut self, uuid: &str) -> String {
        let parent = self
            .parent
            .replace(uuid.to_string())
            .map_or("null".to_string(), |p| js(&p));
        format!(
            r#""parentUuid":{parent},"isSidechain":false,"userType":"external","cwd":"/home/user/projects/synth","sessionId":{},"version":"{VERSION}","gitBranch":"main""#,
            js(&self.session)
        )
    }
}

fn message(role: &str, content: &str) -> String {
    format!(r#"{{"role":{},"content":{content}}}"#, js(role))
}

pub fn claude_code(out: &mut Out, rng: &mut Rng, size: u64, seed: u64) -> io::Result<()> {
    let mut t = Tree {
        rng: Rng(rng.next()),
        session: format!("synth-{seed:08x}-0000-4000-8000-000000000000"),
        parent: None,
        ts: 1_000_000,
    };
    let first = t.uuid();
    out.line(&format!(
        r#"{{"type":"file-history-snapshot","messageId":{},"snapshot":{{"messageId":{},"trackedFileBackups":{{}},"timestamp":"2026-02-12T00:00:00.000Z"}},"isSnapshotUpdate":false}}"#,
        js(&first),
        js(&first)
    ))?;
    let mut backups: Vec<String> = Vec::new();
    let mut turn = 0u64;
    while out.written < size {
        turn += 1;
        user_turn(out, &mut t, if turn == 1 { Some(&first) } else { None })?;
        match turn % 3 {
            0 => bash(out, &mut t)?,
            _ => subagent(out, &mut t)?,
        }
        // An edit: the file history of the first message grows by one file.
        backups.push(format!(
            r#""src/file{turn}.rs":{{"backupFileName":"{:016x}@v1","version":1,"backupTime":"2026-02-12T00:00:00.000Z"}}"#,
            t.rng.next()
        ));
        out.line(&format!(
            r#"{{"type":"file-history-snapshot","messageId":{},"snapshot":{{"messageId":{},"trackedFileBackups":{{{}}},"timestamp":"2026-02-12T00:00:00.000Z"}},"isSnapshotUpdate":true}}"#,
            js(&t.uuid()),
            js(&first),
            backups.join(",")
        ))?;
    }
    Ok(())
}

fn user_turn(out: &mut Out, t: &mut Tree, uuid: Option<&String>) -> io::Result<()> {
    let uuid = uuid.cloned().unwrap_or_else(|| t.uuid());
    let env = t.envelope(&uuid);
    let text = text_of(&mut t.rng, 200);
    out.line(&format!(
        r#"{{{env},"type":"user","message":{},"uuid":{},"timestamp":"{}","permissionMode":"default"}}"#,
        message("user", &js(&text)),
        js(&uuid),
        t.stamp()
    ))?;
    hook(out, t, "UserPromptSubmit")
}

fn hook(out: &mut Out, t: &mut Tree, event: &str) -> io::Result<()> {
    let uuid = t.uuid();
    let env = t.envelope(&uuid);
    let tool = t.uuid();
    out.line(&format!(
        r#"{{{env},"type":"progress","data":{{"type":"hook_progress","hookEvent":"{event}","hookName":"{event}:synth","command":"~/.claude/hooks/notify.sh"}},"parentToolUseID":"{tool}","toolUseID":"{tool}","timestamp":"{}","uuid":{}}}"#,
        t.stamp(),
        js(&uuid)
    ))
}

/// One assistant record per content block, all with the same `message.id`.
fn assistant(out: &mut Out, t: &mut Tree, id: &str, block: &str) -> io::Result<()> {
    let uuid = t.uuid();
    let env = t.envelope(&uuid);
    out.line(&format!(
        r#"{{{env},"message":{{"model":"claude-opus-4-6","id":"{id}","type":"message","role":"assistant","content":[{block}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":3,"cache_creation_input_tokens":812,"cache_read_input_tokens":17842,"output_tokens":210,"service_tier":"standard"}}}},"requestId":"req_{:016x}","type":"assistant","uuid":{},"timestamp":"{}"}}"#,
        t.rng.next(),
        js(&uuid),
        t.stamp()
    ))
}

fn tool_result(out: &mut Out, t: &mut Tree, tool: &str, text: &str) -> io::Result<()> {
    let uuid = t.uuid();
    let env = t.envelope(&uuid);
    let content = format!(
        r#"[{{"tool_use_id":"{tool}","type":"tool_result","content":{},"is_error":false}}]"#,
        js(text)
    );
    out.line(&format!(
        r#"{{{env},"type":"user","message":{},"uuid":{},"timestamp":"{}","toolUseResult":{{"stdout":"","stderr":"","interrupted":false}}}}"#,
        message("user", &content),
        js(&uuid),
        t.stamp()
    ))
}

/// A Task tool call: the subagent's steps, each an `agent_progress` that repeats the
/// subagent's whole history so far and its prompt.
fn subagent(out: &mut Out, t: &mut Tree) -> io::Result<()> {
    let msg_id = format!("msg_{:016x}", t.rng.next());
    let tool = format!("toolu_{:016x}", t.rng.next());
    let prompt = text_of(&mut t.rng, 1500);
    let intro = text_of(&mut t.rng, 300);
    assistant(
        out,
        t,
        &msg_id,
        &format!(r#"{{"type":"text","text":{}}}"#, js(&intro)),
    )?;
    assistant(
        out,
        t,
        &msg_id,
        &format!(
            r#"{{"type":"tool_use","id":"{tool}","name":"Task","input":{{"description":"explore","prompt":{},"subagent_type":"Explore"}}}}"#,
            js(&prompt)
        ),
    )?;
    let agent = format!("{:07x}", t.rng.next() & 0xfff_ffff);
    // #19040 reports about 200x duplication: subagents of a few hundred steps.
    let steps = t.rng.range(100, 300);
    let mut history: Vec<String> = Vec::new();
    for step in 0..steps {
        let role = if step % 2 == 0 { "assistant" } else { "user" };
        let len = t.rng.range(200, 1800) as usize;
        let body = text_of(&mut t.rng, len);
        let step_msg = format!(
            r#"{{"type":"{role}","message":{},"uuid":"{}","timestamp":"{}"}}"#,
            message(
                role,
                &format!(r#"[{{"type":"text","text":{}}}]"#, js(&body))
            ),
            t.uuid(),
            t.stamp()
        );
        let uuid = t.uuid();
        let env = t.envelope(&uuid);
        out.line(&format!(
            r#"{{{env},"slug":"synth-run","type":"progress","data":{{"message":{step_msg},"normalizedMessages":[{}],"type":"agent_progress","prompt":{},"agentId":"{agent}"}},"toolUseID":"agent_{msg_id}","parentToolUseID":"{tool}","uuid":{},"timestamp":"{}"}}"#,
            history.join(","),
            js(&prompt),
            js(&uuid),
            t.stamp()
        ))?;
        history.push(step_msg);
    }
    let summary = text_of(&mut t.rng, 1200);
    tool_result(out, t, &tool, &summary)?;
    hook(out, t, "PostToolUse")
}

/// A Bash tool call whose output grows in `bash_progress` records, each carrying all of it.
fn bash(out: &mut Out, t: &mut Tree) -> io::Result<()> {
    let msg_id = format!("msg_{:016x}", t.rng.next());
    let tool = format!("toolu_{:016x}", t.rng.next());
    assistant(
        out,
        t,
        &msg_id,
        &format!(
            r#"{{"type":"tool_use","id":"{tool}","name":"Bash","input":{{"command":"cargo test","description":"run the tests"}}}}"#
        ),
    )?;
    let mut output = String::new();
    for k in 0..t.rng.range(5, 25) {
        output.push_str(&text_of(&mut t.rng, 400));
        let uuid = t.uuid();
        let env = t.envelope(&uuid);
        out.line(&format!(
            r#"{{{env},"slug":"synth-run","type":"progress","data":{{"type":"bash_progress","output":{},"fullOutput":{},"elapsedTimeSeconds":{},"totalLines":{},"timeoutMs":120000}},"toolUseID":"bash-progress-{k}","parentToolUseID":"{tool}","uuid":{},"timestamp":"{}"}}"#,
            js(&output),
            js(&output),
            k + 2,
            output.matches('\n').count(),
            js(&uuid),
            t.stamp()
        ))?;
    }
    tool_result(out, t, &tool, &output)?;
    let closing = format!("msg_{:016x}", t.rng.next());
    let summary = text_of(&mut t.rng, 500);
    assistant(
        out,
        t,
        &closing,
        &format!(r#"{{"type":"text","text":{}}}"#, js(&summary)),
    )
}
