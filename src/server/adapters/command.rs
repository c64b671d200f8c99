//! Any server, from a command template: {host}, {port}, {dir} (the run directory), {app} and
//! every knob by name ({workers}, {max_requests}...) are replaced by their values.

use super::adapter::{Adapter, Ctx, Prepared};
use crate::server::file::TargetFile;
use crate::server::process::Spawn;
use crate::server::settings::Typed;

/// The adapter for any server started from a `command` template.
pub struct Command;

impl Adapter for Command {
    fn name(&self) -> &'static str {
        "command"
    }

    fn native(&self, _knob: &str) -> Option<&'static str> {
        None
    }

    fn prepare(&self, ctx: &Ctx, values: &Typed) -> anyhow::Result<Prepared> {
        let template = ctx.file.command.as_deref().unwrap_or_default();
        // Split first, then fill in: a value with a space (an app path) stays one argument,
        // and a value cannot add arguments of its own.
        let mut fills = vec![
            ("{host}".to_string(), ctx.host.to_string()),
            ("{port}".to_string(), ctx.port.to_string()),
            ("{dir}".to_string(), ctx.run_dir_text()),
            ("{app}".to_string(), ctx.app().map(|a| a.display().to_string()).unwrap_or_default()),
        ];
        fills.extend(values.pairs().map(|(k, v)| (format!("{{{k}}}"), v.to_string())));
        let fill = |word: &str| fills.iter().fold(word.to_string(), |w, (k, v)| w.replace(k.as_str(), v));
        let template_words = shell_words(template)?;
        for word in &template_words {
            let filled = fills.iter().fold(word.clone(), |w, (k, _)| w.replace(k.as_str(), ""));
            if let Some(start) = filled.find('{')
                && let Some(len) = filled[start..].find('}')
            {
                anyhow::bail!(
                    "command: placeholder {} has no value: set it in [target.config] or [knobs]",
                    &filled[start..start + len + 1]
                );
            }
        }
        let words: Vec<String> = template_words.iter().map(|w| fill(w)).collect();
        let line = words.join(" ");
        let (program, args) = words.split_first().ok_or_else(|| anyhow::anyhow!("command is empty"))?;
        let mut spawn = Spawn::new("command", program, args.to_vec());
        spawn.cwd = ctx.file.path.parent().map(|p| if p.as_os_str().is_empty() { ".".into() } else { p.to_path_buf() });
        Ok(Prepared {
            config_text: line,
            spawns: vec![spawn],
            master: 0,
            error_logs: vec![ctx.dir.join("command.log")],
            status_path: None,
            front: None,
        })
    }

    fn expected_workers(&self, _values: &Typed) -> Option<usize> {
        None
    }

    fn recommend(&self, _file: &TargetFile, values: &Typed) -> String {
        values.pairs().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join("\n")
    }
}

/// Splits a command line as a POSIX shell would for words, single and double quotes.
fn shell_words(line: &str) -> anyhow::Result<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => word.extend(chars.next()),
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                word.extend(chars.next());
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        anyhow::bail!("command: unbalanced quote in {line:?}");
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    #[test]
    fn words() {
        assert_eq!(super::shell_words("a 'b c' \"d \\\" e\" f\\ g").unwrap(), ["a", "b c", "d \" e", "f g"]);
        assert!(super::shell_words("a 'b").is_err());
    }
}
