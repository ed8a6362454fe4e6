//! A long conversation in the real app, as a person has one: 30 questions
//! in Chinese and English (answerable, off-topic and vague ones) with a
//! photo identified in the middle, all in one conversation, with the
//! embedded language model a new install has. Every answer must render, the WebDriver session and the app must
//! live to the end, and the outcomes are counted over the set (no single
//! question's outcome is asserted: see `tests/integration/decisions.rs`).
//! When a step fails, the test says which process is gone.

use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::Value;

use crate::harness::{sample_parrots, App};

const INDEXING: Duration = Duration::from_secs(120);
const ANSWER: Duration = Duration::from_secs(90);

/// The conversation: a photo goes in after the 15th question.
const QUESTIONS: [&str; 30] = [
    "What do cockatiels eat?",
    "How long do budgerigars live?",
    "虎皮鹦鹉吃什么？",
    "Which foods are dangerous for parrots?",
    "How do I reset my router password?",
    "非洲灰鹦鹉能活多久",
    "Where do sun conures come from?",
    "what is the capital of France",
    "玄凤鹦鹉原产于哪里？",
    "Can a cockatiel learn to talk?",
    "企鹅吃什么？",
    "How big does an African grey get?",
    "家里哪些东西对鹦鹉有毒",
    "Do lovebirds need a partner?",
    "how do I bake sourdough bread",
    "What does it eat?",
    "太阳锥尾鹦鹉是什么颜色的？",
    "Is avocado safe for birds?",
    "what size cage does a rabbit need",
    "How loud are sun conures?",
    "牡丹鹦鹉需要伴侣吗？",
    "What colour is a budgie?",
    "Explain lattice quantum chromodynamics renormalisation",
    "How often should I clean the cage?",
    "金刚鹦鹉能活多少年？",
    "Why do parrots pluck their feathers?",
    "鹦鹉可以吃巧克力吗",
    "Where do lovebirds live in the wild?",
    "what do I feed a goldfish",
    "Which parrot is the best talker?",
];

/// The state of every answer the conversation shows (the photo's card is
/// not an answer): its outcome, `streaming`, or `error` (ended without one).
pub(crate) async fn outcomes(app: &App) -> Vec<String> {
    let script = "return Array.from(document.querySelectorAll('#messages .message.assistant')).filter(m => !m.querySelector('.id-card')) \
                  .map(m => m.classList.contains('streaming') ? 'streaming' : (m.className.match(/outcome-(\\w+)/) || [null, 'error'])[1])";
    match app.client.execute(script, vec![]).await {
        Ok(Value::Array(list)) => list.into_iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
        other => panic!("the WebDriver session is lost ({other:?}); processes: {}", app.processes()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn thirty_questions_and_a_photo_in_one_conversation() {
    // The embedded model a new install has (it routes; a tiny model never writes the answer).
    let mut app = App::start_with("soak", None, &[("KEA_EMBEDDED_MODEL", String::new())], &[sample_parrots()]).await;
    app.wait_text("#knowledge-summary", INDEXING, |t| t.starts_with("10 documents")).await;
    let started = Instant::now();
    for (i, question) in QUESTIONS.iter().enumerate() {
        if i == 15 {
            let photo = app.root.path().join("green-bird.png");
            image::RgbImage::from_pixel(64, 64, image::Rgb([0, 255, 0])).save(&photo).unwrap();
            app.client.find(Locator::Css("#pick-image")).await.unwrap().send_keys(photo.to_str().unwrap()).await.unwrap();
            app.wait_text(".id-card", ANSWER, |t| t.contains("Budgerigar")).await;
            app.wait_for("#send:not([disabled])", ANSWER).await;
        }
        let before = outcomes(&app).await.len();
        app.wait_for("#question", ANSWER).await.send_keys(&format!("{question}\u{E007}")).await.unwrap();
        let answered = crate::harness::retry(ANSWER, || async {
            let now = outcomes(&app).await;
            (now.len() > before && now.last().is_some_and(|o| o != "streaming")).then_some(now)
        })
        .await;
        assert!(answered.is_some(), "question {} ({question}) got no answer; processes: {}", i + 1, app.processes());
        app.wait_for("#send:not([disabled])", ANSWER).await;
        let (shell, webkit) = app.memory_kib();
        eprintln!("soak {:>2}/30 {:>5.1} s  app {} MiB + WebKit {} MiB  {question}", i + 1, started.elapsed().as_secs_f32(), shell / 1024, webkit / 1024);
    }
    app.shot("thirty-answers").await;
    let all = outcomes(&app).await;
    let count = |o: &str| all.iter().filter(|x| *x == o).count();
    eprintln!("soak outcomes: {} answered, {} unsure, {} refused", count("answered"), count("unsure"), count("refused"));
    assert_eq!(all.len(), QUESTIONS.len(), "one answer per question in one conversation: {all:?}");
    assert_eq!(count("error"), 0, "every question was answered, unsure or refused: {all:?}");
    // Over the set: most answerable questions answered, the off-topic ones mostly refused.
    assert!(count("answered") >= 6 && count("refused") >= 3, "{all:?}");
    assert_eq!(app.count("#conversations li").await, 1, "all in one conversation");
    app.stop().await;
}
