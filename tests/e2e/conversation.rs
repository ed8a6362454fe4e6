//! A conversation that changes subject, in the real app with no language
//! model: a question naming another subject is not taken as a follow-up of
//! the last one (even when it says "their"), and a follow-up after it is
//! about the new subject. Reopened, the conversation shows each answer as
//! it was: its outcome, text, sources and related passages.

use std::time::Duration;

use crate::harness::{retry, sample_parrots, App};
use crate::soak::outcomes;

const INDEXING: Duration = Duration::from_secs(120);
const ANSWER: Duration = Duration::from_secs(90);

/// Asks `question` and waits for its answer to end; the documents it shows
/// (cited, or offered as related reading).
pub(crate) async fn ask(app: &App, question: &str) -> String {
    let before = outcomes(app).await.len();
    app.wait_for("#question", ANSWER).await.send_keys(&format!("{question}\u{E007}")).await.unwrap();
    let done = retry(ANSWER, || async {
        let now = outcomes(app).await;
        (now.len() > before && now.last().is_some_and(|o| o != "streaming")).then_some(now)
    })
    .await;
    assert!(done.is_some(), "{question} got no answer; processes: {}", app.processes());
    app.wait_for("#send:not([disabled])", ANSWER).await;
    let last = "#messages .message.assistant:last-child";
    let script = format!("return Array.from(document.querySelectorAll('{last} .sources, {last} .related')).map(e => e.textContent).join(' ')");
    app.client.execute(&script, vec![]).await.unwrap().as_str().unwrap_or_default().to_string()
}

/// Each answer of the conversation shown: its outcome, text, sources and related passages.
async fn thread(app: &App) -> Vec<String> {
    let script = "return Array.from(document.querySelectorAll('#messages .message.assistant')).map(m => \
                  [(m.className.match(/outcome-(\\w+)/) || [null, 'none'])[1], \
                   ...Array.from(m.querySelectorAll('.answer, .sources, .related')).map(e => e.textContent)].join(' | '))";
    let value = app.client.execute(script, vec![]).await.unwrap();
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_that_changes_subject_follows_the_new_one() {
    let mut app = App::start_with("changing-subject", None, &[("KEA_EMBEDDED_MODEL", String::new())], &[sample_parrots()]).await;
    app.wait_text("#knowledge-summary", INDEXING, |t| t.starts_with("10 documents")).await;
    let first = ask(&app, "How long do African grey parrots live?").await;
    assert!(first.contains("african-grey"), "{first}");
    let second = ask(&app, "What do Quaker parrots use to make their homes?").await;
    assert!(second.contains("monk-parakeet") && !second.contains("african-grey"), "the new subject, not the last one: {second}");
    let third = ask(&app, "What do they eat?").await;
    assert!(third.contains("monk-parakeet") && !third.contains("african-grey"), "the follow-up is about the new subject: {third}");
    app.shot("conversation-that-changes-subject").await;

    let shown = thread(&app).await;
    app.click("#new-chat").await;
    app.wait_for("#messages .empty", ANSWER).await;
    app.click("#conversations li:first-child button.title").await;
    let reopened = retry(ANSWER, || async { Some(thread(&app).await).filter(|t| t.len() == shown.len()) }).await;
    assert_eq!(reopened.as_ref(), Some(&shown), "a reopened conversation shows its answers as they were");
    app.stop().await;
}
