// The page of `nmt serve`: no build step, no assets from the internet.
// Builds every element with textContent, so tokens and translations are never parsed as HTML.
"use strict";

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  return node;
}

function setStatus(message, isError = false) {
  $("status").textContent = message;
  $("status").className = isError ? "error" : "";
}

// Weight 0 is white, weight 1 dark blue.
function shade(weight) {
  const w = Math.max(0, Math.min(1, weight));
  return `hsl(215, 75%, ${Math.round(100 - 62 * w)}%)`;
}

// The colour scale beside a map: weight 0 to 1, in the map's shades.
function colourScale() {
  const scale = el("div", { class: "scale", "aria-label": "colour scale: attention weight 0 to 1" });
  scale.appendChild(el("span", {}, "weight 0"));
  const bar = scale.appendChild(el("span", { class: "bar" }));
  bar.style.background = `linear-gradient(to right, ${shade(0)}, ${shade(0.5)}, ${shade(1)})`;
  scale.appendChild(el("span", {}, "1"));
  return scale;
}

// One row per output token (EOS included), one column per source token.
function heatmap(sourceTokens, targetTokens, weights) {
  const table = el("table", { class: "heatmap" });
  table.appendChild(el("caption", {}, "Rows: the output (target) tokens; columns: the source tokens. " +
    "Each row is one decoder step's attention over the source and sums to 1; hover a cell for its weight."));
  const head = el("tr");
  head.appendChild(el("th", { class: "corner" }, "target ↓  source →"));
  for (const token of sourceTokens) head.appendChild(el("th", { scope: "col" }, token));
  table.appendChild(el("thead")).appendChild(head);
  const body = table.appendChild(el("tbody"));
  targetTokens.forEach((token, i) => {
    const row = body.appendChild(el("tr"));
    row.appendChild(el("th", { scope: "row" }, token));
    weights[i].forEach((w, j) => {
      const cell = row.appendChild(el("td", { title: `${token} → ${sourceTokens[j]}: ${w.toFixed(3)}` }));
      cell.style.background = shade(w);
    });
  });
  return table;
}

// The map to show: the search's weights, or one layer and head of a Transformer's cross-attention
// (one head of a multi-head RNN attention: its one layer).
function attentionView(attention) {
  const box = el("div", { class: "attention" });
  const draw = (weights) => {
    box.querySelector("table.heatmap")?.remove();
    box.insertBefore(heatmap(attention.source_tokens, attention.target_tokens, weights), box.querySelector(".scale"));
  };
  if (attention.layers) {
    const pick = el("select", { class: "view", "aria-label": "attention map" });
    const one = attention.layers.length === 1;
    pick.appendChild(el("option", { value: "mean" }, one ? "mean over heads" : "last layer, mean over heads"));
    attention.layers.forEach((heads, l) => heads.forEach((_, h) =>
      pick.appendChild(el("option", { value: `${l}.${h}` }, one ? `head ${h + 1}` : `layer ${l + 1}, head ${h + 1}`))));
    pick.addEventListener("change", () => {
      if (pick.value === "mean") return draw(attention.weights);
      const [l, h] = pick.value.split(".").map(Number);
      draw(attention.layers[l][h]);
    });
    box.appendChild(pick);
  }
  // what this engine cannot show (every layer and head of a Transformer needs --engine torch), above the map
  if (attention.note) box.appendChild(el("p", { class: "muted note" }, attention.note));
  box.appendChild(colourScale());
  draw(attention.weights);
  return box;
}

function hypothesesTable(hypotheses) {
  const table = el("table", { class: "hyps" });
  const head = table.appendChild(el("thead")).appendChild(el("tr"));
  const columns = {
    "#": "rank in the beam, best first",
    "score": "what beam search ranks by: log P divided by the length penalty (and with the coverage penalty, if set)",
    "log P": "the model's log-probability of the hypothesis: the sum of its tokens' log-probabilities (0 is certain)",
    "hypothesis": "the finished translation",
  };
  for (const [name, about] of Object.entries(columns)) head.appendChild(el("th", { title: about }, name));
  const body = table.appendChild(el("tbody"));
  hypotheses.forEach((hyp, i) => {
    const row = body.appendChild(el("tr"));
    row.appendChild(el("td", { class: "num" }, String(i + 1)));
    row.appendChild(el("td", { class: "num" }, hyp.score.toFixed(3)));
    row.appendChild(el("td", { class: "num" }, hyp.log_prob.toFixed(3)));
    row.appendChild(el("td", {}, hyp.text));
  });
  return table;
}

function showResult(info, answer) {
  const section = el("section", { class: "result", "data-model": info.name });
  section.appendChild(el("h2", {}, `${info.name} (${info.attention})`));
  const item = answer.translations[0];
  section.appendChild(el("p", { class: "translation" }, item.translation));
  section.appendChild(el("p", { class: "muted" }, `beam ${answer.beam}: ${item.hypotheses.length} finished hypotheses shown`));
  section.appendChild(hypothesesTable(item.hypotheses));
  section.appendChild(el("p", { class: "muted legend" }, "log P: the model's log-probability of the " +
    "hypothesis (the sum over its tokens; closer to 0 is more probable). score: what the beam ranks by, " +
    "log P after the length penalty (GNMT α) and any coverage penalty, so longer hypotheses are not " +
    "punished for their length alone."));
  if (item.attention) section.appendChild(attentionView(item.attention));
  else section.appendChild(el("p", { class: "muted note" }, info.attention_note || "This model has no attention to show."));
  return section;
}

async function postJSON(url, payload) {
  const response = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" },
                                      body: JSON.stringify(payload) });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

let MODELS = [];  // GET /models, filled once when the page loads

async function loadModels() {
  const response = await fetch("/models");
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  MODELS = data.models;
  $("beam").max = data.limits.max_beam;
  const first = MODELS.find((m) => m.name === data.default) || MODELS[0];
  $("beam").value = Math.min(first.default_beam, data.limits.max_beam);
  const languages = first.vocabulary && first.vocabulary.languages;  // [source, target] where recorded
  if (languages && languages.length) $("source").placeholder = `A sentence in ${languages[0]} (the source language of ${first.name})`;
  const box = $("models");
  box.querySelector(".muted")?.remove();
  for (const info of MODELS) {
    const label = box.appendChild(el("label"));
    const check = label.appendChild(el("input", { type: "checkbox", name: "model", value: info.name }));
    check.checked = true;
    const size = info.parameters == null ? "" : `, ${(info.parameters / 1e6).toFixed(1)}M parameters`;
    label.appendChild(document.createTextNode(` ${info.name}: ${info.attention}${size}, ${info.engine}`));
  }
}

function showError(info, err) {
  const section = el("section", { class: "result", "data-model": info.name });
  section.appendChild(el("h2", {}, `${info.name} (${info.attention})`));
  section.appendChild(el("p", { class: "error" }, err.message));
  return section;
}

async function translate(event) {
  event.preventDefault();
  const text = $("source").value.trim();
  const chosen = MODELS.filter((m) => document.querySelector(`input[name=model][value="${CSS.escape(m.name)}"]`).checked);
  if (!text || chosen.length === 0) return setStatus("Type a sentence and pick at least one model.", true);
  const beam = Number($("beam").value);
  const nBest = $("all-hyps").checked ? beam : 1;
  setStatus("Translating…");
  $("go").disabled = true;
  try {
    // each model answers on its own: one model's error does not hide the others
    const answers = await Promise.allSettled(chosen.map((info) =>
      // a model whose engine returns no attention (ctranslate2) is asked without: it would answer 422
      postJSON("/translate", { text: [text], model: info.name, beam, n_best: nBest,
                               attention: info.attention_weights !== false })));
    $("results").replaceChildren(...answers.map((answer, i) => answer.status === "fulfilled"
      ? showResult(chosen[i], answer.value) : showError(chosen[i], answer.reason)));
    const failed = answers.filter((a) => a.status === "rejected").length;
    setStatus(failed ? `${failed} of ${answers.length} models failed` : "", failed > 0);
  } finally {
    $("go").disabled = false;
  }
}

$("ask").addEventListener("submit", translate);
loadModels().catch((err) => setStatus(`Could not load the models: ${err.message}`, true));
