//! Names of sampled addresses: the function (inlined ones included), file
//! and line of each, read from the module's debug information (DWARF,
//! through addr2line) or, without it, its symbol table. The module is the
//! one the process recorded (path, load bias); a module file that is gone
//! or unreadable names its addresses by the module alone.

use std::collections::HashMap;

/// One frame of a symbolized address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    pub function: String,
    /// Empty when unknown.
    pub file: String,
    /// 0 when unknown.
    pub line: u32,
    /// The binary or library of the function (empty when unknown).
    pub module: String,
}

/// The modules' symbol readers, each opened once.
#[derive(Default)]
pub struct Symbols {
    loaders: HashMap<String, Option<addr2line::Loader>>,
}

impl Symbols {
    /// The frames at `address` of a process with `modules`, outermost
    /// first (a function, then what was inlined into it, in order).
    pub fn frames(&mut self, modules: &[raw::Module], address: u64) -> Vec<Frame> {
        let Some(m) = modules.iter().find(|m| (m.start..m.end).contains(&address)) else {
            return vec![unknown("[unknown]")];
        };
        let base = m.path.rsplit('/').next().unwrap_or(&m.path);
        let loader = self.loaders.entry(m.path.clone()).or_insert_with(|| match addr2line::Loader::new(&m.path) {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::debug!(path = m.path, "no symbols: {e}");
                None
            }
        });
        let Some(loader) = loader else {
            return vec![Frame { module: m.path.clone(), ..unknown(&format!("[{base}]")) }];
        };
        let probe = address - m.bias;
        let mut out = Vec::new();
        if let Ok(mut frames) = loader.find_frames(probe) {
            while let Ok(Some(f)) = frames.next() {
                let Some(name) = f.function.as_ref().and_then(|n| n.demangle().ok()) else { continue };
                let (file, line) = f
                    .location
                    .map_or((String::new(), 0), |l| (l.file.unwrap_or_default().to_string(), l.line.unwrap_or(0)));
                out.push(Frame { function: name.into_owned(), file, line, module: m.path.clone() });
            }
        }
        if out.is_empty() {
            let name = loader.find_symbol(probe).map(|s| addr2line::demangle_auto(s.into(), None).into_owned());
            let (file, line) = match loader.find_location(probe) {
                Ok(Some(l)) => (l.file.unwrap_or_default().to_string(), l.line.unwrap_or(0)),
                _ => (String::new(), 0),
            };
            out.push(Frame {
                function: name.unwrap_or_else(|| format!("[{base}]")),
                file,
                line,
                module: m.path.clone(),
            });
        }
        // addr2line gives the innermost (inlined) frame first.
        out.reverse();
        out
    }
}

fn unknown(name: &str) -> Frame {
    Frame { function: name.to_string(), file: String::new(), line: 0, module: String::new() }
}
