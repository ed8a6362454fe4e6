// The evaluation view: pick a golden set (shipped or the user's JSONL), run
// it under two or more retrieval configurations, compare Recall@k / MRR /
// nDCG side by side as a chart and a table, and list each one's misses.
import { api, type AnswersDto, type EvalDto, type OutcomesDto, type RefusalDto } from "./api";
import { drawChart, METRICS, METRIC_LABELS } from "./chart";
import { $, el, toast, toastError } from "./dom";
import { t } from "./i18n";

/** The configurations the engine knows (kea_engine::eval::default_configs). */
const CONFIGS = ["dense", "bm25", "hybrid", "hybrid+mmr", "hybrid+mmr+rerank", "full"];
const CHECKED = new Set(["bm25", "hybrid", "hybrid+mmr+rerank"]);
let golden: string | null = null;

function showResults(results: EvalDto[]) {
  $("eval-chart").replaceChildren(drawChart(results));
  const table = $("eval-table");
  table.replaceChildren();
  const head = el("tr");
  head.append(el("th", ""), ...METRICS.map((m) => el("th", METRIC_LABELS[m])), el("th", "ms/q"));
  table.append(head);
  for (const r of results) {
    const row = el("tr");
    row.append(el("th", r.name), ...METRICS.map((m) => el("td", r.metrics[m].toFixed(3))), el("td", r.ms_per_query.toFixed(1)));
    table.append(row);
  }
  const refusal = $("eval-refusal");
  refusal.replaceChildren();
  for (const r of results) {
    if (!r.refusal) continue;
    const f = r.refusal;
    const box = document.createElement("details");
    const line = t("eval.refusal", {
      name: r.name,
      refused: (f.refused * 100).toFixed(0),
      unanswerable: String(f.unanswerable),
      answered: (f.answered * 100).toFixed(0),
      answerable: String(f.answerable),
      precision: (f.precision * 100).toFixed(0),
    });
    box.append(el("summary", line), outcomeTable(f));
    for (const wrong of f.wrong) box.append(el("p", wrong, "muted"));
    refusal.append(box);
  }
  const full = results.find((r) => r.name === "full") ?? results[results.length - 1];
  if (full && Object.keys(full.answers).length) refusal.append(el("h3", t("eval.seen", { name: full.name })), answersTable(full.answers));
  if (results.some((r) => r.refusal)) refusal.append(el("p", t("eval.out_of_fold"), "muted"));
  const misses = $("eval-misses");
  misses.replaceChildren();
  for (const r of results) {
    const box = document.createElement("details");
    box.append(el("summary", `${t("eval.misses", { name: r.name })} (${r.misses.length})`));
    if (!r.misses.length) box.append(el("p", t("eval.no_misses"), "muted"));
    for (const miss of r.misses) {
      const item = el("div", undefined, "miss");
      item.append(el("strong", miss.query), el("p", `→ ${miss.relevant.join(", ")}`, "muted"), el("ol"));
      for (const got of miss.got) item.querySelector("ol")!.append(el("li", got));
      box.append(item);
    }
    misses.append(box);
  }
}

async function run() {
  const configs = Array.from(document.querySelectorAll<HTMLInputElement>("#eval-configs input:checked")).map((i) => i.value);
  if (configs.length < 2) return toast(t("eval.need_two"), "error");
  const runButton = $<HTMLButtonElement>("eval-run");
  runButton.disabled = true;
  runButton.textContent = t("eval.running");
  try {
    showResults(await api.runEval(golden, configs));
  } catch (e) {
    toastError(e);
  } finally {
    runButton.disabled = false;
    runButton.textContent = t("eval.run");
  }
}

export function setupEvaluation() {
  const box = $("eval-configs");
  for (const name of CONFIGS) {
    const label = el("label", undefined, "check");
    const input = Object.assign(document.createElement("input"), { type: "checkbox", value: name, checked: CHECKED.has(name) });
    label.append(input, el("span", name));
    box.append(label);
  }
  $("eval-run").addEventListener("click", () => void run());
  $("eval-pick").addEventListener("click", async () => {
    try {
      const [chosen] = await api.pickPaths("golden_set");
      if (chosen) {
        golden = chosen;
        $("eval-golden").textContent = chosen;
        $("eval-golden").removeAttribute("data-i18n");
      }
    } catch (e) {
      toastError(e);
    }
  });
}

/** The confusion table: answerable and unanswerable questions by outcome. */
function outcomeTable(f: RefusalDto): HTMLElement {
  const table = el("table", undefined, "outcomes");
  const head = el("tr");
  head.append(el("th", ""), el("th", t("eval.answered")), el("th", t("eval.unsure")), el("th", t("eval.refused")));
  table.append(head);
  const rows: [string, OutcomesDto][] = [
    [`${t("eval.answerable")} (${f.answerable})`, f.answerable_outcomes],
    [`${t("eval.unanswerable")} (${f.unanswerable})`, f.unanswerable_outcomes],
  ];
  for (const [name, o] of rows) {
    const row = el("tr");
    row.append(el("th", name), ...[o.answered, o.unsure, o.refused].map((v) => el("td", `${(v * 100).toFixed(0)}%`)));
    table.append(row);
  }
  return table;
}

/** What a user without a language model sees, per language: outcomes, the
 * right document shown, the answering phrase quoted, another document quoted,
 * and for unsure outcomes the answering phrase shown as a related sentence. */
function answersTable(answers: { [key in string]?: AnswersDto }): HTMLElement {
  const table = el("table", undefined, "outcomes");
  const head = el("tr");
  const columns = ["eval.answered", "eval.unsure", "eval.refused", "eval.shown", "eval.quoted", "eval.other_document", "eval.related_quoted"] as const;
  head.append(el("th", ""), ...columns.map((c) => el("th", t(c))));
  table.append(head);
  const percent = (v: number) => `${(v * 100).toFixed(0)}%`;
  for (const [group, a] of Object.entries(answers)) {
    if (!a) continue;
    const row = el("tr");
    const of = (share: number, n: number) => (n ? `${percent(share)} (${n})` : "–");
    row.append(
      el("th", `${group} (${a.questions})`),
      ...[a.answered, a.unsure, a.refused, a.shown].map((v) => el("td", percent(v))),
      el("td", of(a.quoted, a.quoted_of)),
      el("td", percent(a.other_document)),
      el("td", of(a.related_quoted, a.related_quoted_of)),
    );
    table.append(row);
  }
  return table;
}
