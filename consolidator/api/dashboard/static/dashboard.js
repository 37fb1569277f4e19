// The job page follows its job live: it polls the dashboard's JSON of the job (which reads
// /v1/jobs/{id} and the journal with the session's token) and updates the states in place.
(function () {
  "use strict";
  const job = document.getElementById("job");
  if (!job || job.dataset.done === "true") { return; }
  const set = (id, text) => { const el = document.getElementById(id); if (el) { el.textContent = text; } };
  async function poll() {
    let doc;
    try {
      const resp = await fetch(job.dataset.poll, {credentials: "same-origin", headers: {Accept: "application/json"}});
      if (!resp.ok) { set("job-error", "the dashboard answered " + resp.status + "; retrying"); return setTimeout(poll, 3000); }
      doc = await resp.json();
    } catch (err) { set("job-error", "no answer; retrying"); return setTimeout(poll, 3000); }
    set("job-state", doc.job.state);
    set("job-progress", doc.job.progress || "");
    set("job-error", doc.job.error || "");
    set("moves-done", String(doc.moves_done));
    const bar = document.getElementById("moves-bar");
    if (bar) { bar.value = doc.moves_done; }
    document.querySelectorAll("[data-move]").forEach((el) => {
      const state = doc.states[el.dataset.move];
      if (state) { el.textContent = state; el.className = "badge b-" + state; }
    });
    if (doc.done) { job.dataset.done = "true"; window.location.reload(); return; }
    setTimeout(poll, 1000);
  }
  setTimeout(poll, 1000);
}());
