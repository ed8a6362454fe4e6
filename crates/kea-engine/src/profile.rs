//! The collection profile: what a knowledge folder is about, read from an
//! optional `kea.toml` at its root. It names the kind of thing its labelled
//! documents describe (for identification prompts and replies), the topic
//! (for the router), the front-matter keys that hold a label's names, and
//! the visual attributes worth describing in a photo. Without the file every
//! word is generic, so the engine serves birds, plants or minerals alike.

use crate::language::Language;
use std::path::Path;

use serde::Deserialize;

use crate::frontmatter::FrontMatter;

/// The file name looked for at the knowledge folder's root.
pub const PROFILE_FILE: &str = "kea.toml";

/// A knowledge folder's profile (every field optional).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Profile {
    pub collection: Collection,
    pub labels: LabelFields,
    pub identify: IdentifyWords,
}

/// What the collection is about, in English and Chinese.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Collection {
    /// One labelled thing, singular: "parrot", "mushroom".
    pub kind: Option<String>,
    pub kind_zh: Option<String>,
    /// What the documents cover: "parrots and their care".
    pub topic: Option<String>,
}

/// Front-matter keys holding a label's names; the first present key wins.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct LabelFields {
    pub zh: Vec<String>,
    pub en: Vec<String>,
    pub scientific: Vec<String>,
    pub aliases: Vec<String>,
}

impl Default for LabelFields {
    fn default() -> Self {
        let keys = |ks: &[&str]| ks.iter().map(|k| k.to_string()).collect();
        LabelFields { zh: keys(&["zh", "name_zh"]), en: keys(&["en", "name"]), scientific: keys(&["latin", "scientific_name"]), aliases: keys(&["aliases"]) }
    }
}

/// Words for the image classifier's visual description.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct IdentifyWords {
    /// Attribute groups: each a list of CLIP phrases ("a {kind} with a
    /// crest", "a green {kind}"). A photo's description keeps the phrase
    /// CLIP is sure of in each group, shortened ("a crest", "green").
    pub attributes: Vec<Vec<String>>,
}

impl Default for IdentifyWords {
    fn default() -> Self {
        let colours = ["green", "yellow", "blue", "red", "grey", "white", "brown", "black"];
        IdentifyWords { attributes: vec![colours.iter().map(|c| format!("a {c} {{kind}}")).collect()] }
    }
}

impl Profile {
    /// Reads `<knowledge>/kea.toml`; a missing file is the default profile,
    /// an unreadable one an error naming the problem.
    pub fn load(knowledge_dir: &Path) -> Result<Profile, String> {
        const PROFILE_LIMIT: u64 = 1 << 20;
        let path = knowledge_dir.join(PROFILE_FILE);
        // A profile is a few lines: a pipe, a device or a huge file in its place is refused.
        match crate::scan::read_regular(&path, PROFILE_LIMIT) {
            Ok(Some(bytes)) => {
                let text = String::from_utf8(bytes).map_err(|_| format!("{PROFILE_FILE}: not UTF-8 text"))?;
                toml::from_str(&text).map_err(|e| format!("{PROFILE_FILE}: {e}"))
            }
            Ok(None) => Ok(Profile::default()),
            Err(e) => Err(format!("{PROFILE_FILE}: {e}")),
        }
    }

    /// The kind of thing in `lang`, if the profile names it.
    pub fn kind(&self, lang: Language) -> Option<&str> {
        if lang == Language::Chinese {
            self.collection.kind_zh.as_deref().or(self.collection.kind.as_deref())
        } else {
            self.collection.kind.as_deref()
        }
    }

    /// Every name a document's front matter gives it (title, the label's
    /// names in each language, the scientific name, aliases), deduplicated.
    pub fn names(&self, front_matter: &FrontMatter) -> Vec<String> {
        let f = &self.labels;
        let keys = ["title"].iter().map(|k| k.to_string()).chain(f.zh.iter().chain(&f.en).chain(&f.scientific).chain(&f.aliases).cloned());
        let mut names: Vec<String> = Vec::new();
        for key in keys {
            let values = match front_matter.0.get(&key) {
                Some(crate::frontmatter::FrontMatterValue::Text(s)) => vec![s.clone()],
                Some(crate::frontmatter::FrontMatterValue::List(items)) => items.clone(),
                None => continue,
            };
            for name in values.into_iter().map(|v| v.trim().to_string()).filter(|v| !v.is_empty() && v.chars().count() <= 80) {
                if !names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
                    names.push(name);
                }
            }
        }
        names
    }

    /// Changes whenever the names extracted from front matter would change:
    /// stored with the index so a changed profile re-reads the documents.
    pub fn names_signature(&self) -> String {
        let f = &self.labels;
        format!("zh={:?};en={:?};sci={:?};aka={:?}", f.zh, f.en, f.scientific, f.aliases)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontmatter::split_front_matter;

    #[test]
    fn no_file_is_the_generic_profile() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load(dir.path()).unwrap();
        assert_eq!(profile, Profile::default());
        assert_eq!(profile.kind(Language::English), None);
    }

    #[test]
    fn the_file_names_the_kind_and_the_name_keys() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(PROFILE_FILE), "[collection]\nkind = \"mushroom\"\nkind_zh = \"蘑菇\"\n[labels]\nzh = [\"zh_name\"]\n").unwrap();
        let profile = Profile::load(dir.path()).unwrap();
        assert_eq!((profile.kind(Language::English), profile.kind(Language::Chinese)), (Some("mushroom"), Some("蘑菇")));
        let (fm, _) = split_front_matter("---\nzh_name: 鸡油菌\nen: Chanterelle\nlatin: Cantharellus cibarius\naliases: [Girolle, chanterelle]\n---\n");
        assert_eq!(profile.names(&fm), ["鸡油菌", "Chanterelle", "Cantharellus cibarius", "Girolle"]);
        std::fs::write(dir.path().join(PROFILE_FILE), "[collection\nkind = 1").unwrap();
        assert!(Profile::load(dir.path()).unwrap_err().starts_with("kea.toml"));
    }

    #[cfg(unix)]
    #[test]
    fn a_pipe_a_link_or_a_huge_file_in_place_of_the_profile_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(PROFILE_FILE);
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        assert!(Profile::load(dir.path()).unwrap_err().contains("not a regular file"), "a FIFO would block forever");
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert!(Profile::load(dir.path()).is_err(), "/dev/zero would fill the memory");
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, format!("# {}\n", "x".repeat(2 << 20))).unwrap();
        assert!(Profile::load(dir.path()).unwrap_err().contains("limit"));
    }
}
