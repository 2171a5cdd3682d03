//! A Codex rollout in the shape its users report (openai/codex #24948, #31198, #42345;
//! ccusage #876): every `compacted` record repeats the earlier history in
//! `replacement_history`, a 1 MB image from the first turn included; event messages mirror
//! the response items; a shell command's output is stored as a function call output and
//! again in its mirror; and every other `token_count` repeats the totals before it.

use std::io;

use super::{Out, Rng, js, text_of};

struct Rollout {
    rng: Rng,
    ts: u64,
}

impl Rollout {
    fn line(&mut self, out: &mut Out, kind: &str, payload: &str) -> io::Result<()> {
        self.ts += self.rng.range(5, 1500);
        let s = self.ts / 1000;
        out.line(&format!(
            r#"{{"timestamp":"2026-02-23T{:02}:{:02}:{:02}.{:03}Z","type":"{kind}","payload":{payload}}}"#,
            (s / 3600) % 24,
            (s / 60) % 60,
            s % 60,
            self.ts % 1000
        ))
    }
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len() * 4 / 3 + 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for k in 0..4 {
            if k <= c.len() {
                s.push(A[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

fn user_item(content: &str) -> String {
    format!(r#"{{"type":"message","role":"user","content":[{content}]}}"#)
}

fn input_text(text: &str) -> String {
    format!(r#"{{"type":"input_text","text":{}}}"#, js(text))
}

pub fn codex(out: &mut Out, rng: &mut Rng, size: u64, seed: u64) -> io::Result<()> {
    let mut r = Rollout {
        rng: Rng(rng.next()),
        ts: 40_000_000,
    };
    let instructions = text_of(&mut r.rng, 12_000);
    r.line(
        out,
        "session_meta",
        &format!(
            r#"{{"id":"synth-{seed:08x}","timestamp":"2026-02-23T11:00:00.000Z","cwd":"/home/user/synth","originator":"codex_cli_rs","cli_version":"0.104.0","source":"cli","model_provider":"openai","base_instructions":{{"text":{}}}}}"#,
            js(&instructions)
        ),
    )?;
    let pixels: Vec<u8> = (0..750_000).map(|_| r.rng.next() as u8).collect();
    let image = format!(
        r#"{{"type":"input_image","image_url":"data:image/png;base64,{}"}}"#,
        base64(&pixels)
    );
    let user_rules = text_of(&mut r.rng, 2000);
    let mut history: Vec<String> = Vec::new();
    let mut total = 0u64;
    let mut turn = 0u64;
    while out.written < size {
        turn += 1;
        let turn_id = format!("{:016x}", r.rng.next());
        r.line(
            out,
            "turn_context",
            &format!(
                r#"{{"turn_id":"{turn_id}","cwd":"/home/user/synth","approval_policy":"on-request","sandbox_policy":{{"type":"workspace-write","network_access":false}},"model":"gpt-5.5","effort":"medium","summary":"auto","user_instructions":{}}}"#,
                js(&user_rules)
            ),
        )?;
        r.line(
            out,
            "event_msg",
            &format!(
                r#"{{"type":"task_started","turn_id":"{turn_id}","model_context_window":258400}}"#
            ),
        )?;
        let ask = text_of(&mut r.rng, 300);
        let content = if turn == 1 {
            format!("{},{image}", input_text(&ask))
        } else {
            input_text(&ask)
        };
        let user = user_item(&content);
        r.line(out, "response_item", &user)?;
        r.line(
            out,
            "event_msg",
            &format!(
                r#"{{"type":"user_message","message":{},"images":[]}}"#,
                js(&ask)
            ),
        )?;
        history.push(user);
        let thought = text_of(&mut r.rng, 400);
        let sealed = r.rng.next();
        r.line(
            out,
            "response_item",
            &format!(
                r#"{{"type":"reasoning","summary":[{{"type":"summary_text","text":{}}}],"encrypted_content":"{:032x}"}}"#,
                js(&thought),
                sealed
            ),
        )?;
        r.line(
            out,
            "event_msg",
            &format!(r#"{{"type":"agent_reasoning","text":{}}}"#, js(&thought)),
        )?;
        let call = format!("call_{:016x}", r.rng.next());
        r.line(
            out,
            "response_item",
            &format!(
                r#"{{"type":"function_call","name":"exec_command","arguments":"{{\"cmd\":\"cargo test\"}}","call_id":"{call}"}}"#
            ),
        )?;
        let len = r.rng.range(1000, 20_000) as usize;
        let output = text_of(&mut r.rng, len);
        r.line(
            out,
            "response_item",
            &format!(
                r#"{{"type":"function_call_output","call_id":"{call}","output":{}}}"#,
                js(&output)
            ),
        )?;
        total += r.rng.range(5000, 30_000);
        for _ in 0..2 {
            // The second repeats the first's totals.
            r.line(
                out,
                "event_msg",
                &format!(
                    r#"{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{total},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":0,"total_tokens":{total}}},"model_context_window":258400}},"rate_limits":{{"primary":{{"used_percent":{}.0,"window_minutes":300}}}}}}"#,
                    total / 2,
                    total / 20,
                    turn % 100
                ),
            )?;
        }
        let answer = text_of(&mut r.rng, 600);
        r.line(
            out,
            "response_item",
            &format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":{}}}]}}"#,
                js(&answer)
            ),
        )?;
        r.line(
            out,
            "event_msg",
            &format!(r#"{{"type":"agent_message","message":{}}}"#, js(&answer)),
        )?;
        r.line(
            out,
            "event_msg",
            &format!(
                r#"{{"type":"task_complete","turn_id":"{turn_id}","last_agent_message":{}}}"#,
                js(&answer)
            ),
        )?;
        if turn.is_multiple_of(20) {
            let summary = text_of(&mut r.rng, 1500);
            let replacement = format!("{},{}", history.join(","), user_item(&input_text(&summary)));
            r.line(
                out,
                "compacted",
                &format!(
                    r#"{{"message":{},"replacement_history":[{replacement}]}}"#,
                    js(&summary)
                ),
            )?;
        }
    }
    Ok(())
}
