// The live run page's clock, and what it says when the server goes away. A static file, as the
// Content-Security-Policy allows no inline script.
//
// The clock: every element with data-elapsed-ms shows the time since its run started, counted on from what the server
// rendered (a live step replaces the element, and the count goes on from the new value).
//
// The server going away: when a request for the run's next step fails (no answer at all, or a 5xx), the page says the
// server could not be reached, stops the clock (the run is not known to go on), and asks the run's page every few
// seconds whether the server answers again. Once it does, Resume asks for the step again, saying a person asked to
// go on: the server resumes the run if it was interrupted meanwhile (blueprints/live_runs.py).
(function () {
  "use strict";
  const origins = new WeakMap();
  const CHECK_EVERY_MS = 2000;
  const LOST = "data-connection-lost"; // on the run's article while its server cannot be reached
  const NEXT = /^run-(\d+)-next$/; // the element that asks for a run's next step (runs/_run_next.html)

  function tick() {
    const now = performance.now();
    for (const element of document.querySelectorAll("[data-elapsed-ms]")) {
      if (!origins.has(element)) {
        origins.set(element, now - Number(element.dataset.elapsedMs));
      }
      if (element.closest("[" + LOST + "]")) {
        continue; // stopped where it was when the server went away
      }
      element.textContent = ((now - origins.get(element)) / 1000).toFixed(1) + " s";
    }
  }

  function paragraph(text) {
    const element = document.createElement("p");
    element.textContent = text;
    return element;
  }

  function answers(url) {
    // Any answer but a 5xx will do: a redirect to the login page is an answer too.
    return fetch(url, { method: "HEAD", cache: "no-store", redirect: "manual", credentials: "same-origin" }).then(
      (response) => response.type === "opaqueredirect" || response.status < 500,
      () => false,
    );
  }

  function offerResume(runId, notice, step) {
    notice.replaceChildren(paragraph("The server answers again. Resume to follow the run from where this page left it."));
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "Resume";
    button.addEventListener("click", function () {
      const run = document.getElementById("run-" + runId);
      notice.remove();
      if (run) {
        run.removeAttribute(LOST);
      }
      const next = document.getElementById("run-" + runId + "-next");
      const again = document.createElement("div");
      again.id = "run-" + runId + "-next";
      again.hidden = true;
      again.setAttribute("hx-post", step.url);
      again.setAttribute("hx-trigger", "load");
      again.setAttribute("hx-swap", "none");
      again.setAttribute("hx-vals", JSON.stringify(Object.assign({}, step.values, { resume: "1" })));
      if (next) {
        next.replaceWith(again);
      } else if (run) {
        run.append(again);
      }
      htmx.process(again);
    });
    notice.append(button);
  }

  function connectionLost(event) {
    const element = event.target;
    const match = element && element.id ? NEXT.exec(element.id) : null;
    if (!match || (event.type === "htmx:responseError" && event.detail.xhr.status < 500)) {
      return;
    }
    const runId = match[1];
    const run = document.getElementById("run-" + runId);
    if (!run || run.hasAttribute(LOST)) {
      return;
    }
    run.setAttribute(LOST, "");
    const status = event.type === "htmx:responseError" ? " (it answered " + event.detail.xhr.status + ")" : "";
    const notice = document.createElement("div");
    notice.className = "notice error connection-lost";
    notice.setAttribute("role", "alert");
    notice.append(
      paragraph(
        "The server could not be reached" + status + ", so this page cannot tell how the run goes on. " +
          "The clock is stopped; checking every few seconds whether the server answers again…",
      ),
    );
    const state = run.querySelector(".run-state") || run;
    state.prepend(notice);
    const step = { url: element.getAttribute("hx-post"), values: JSON.parse(element.getAttribute("hx-vals") || "{}") };
    const check = function () {
      answers(element.dataset.runUrl || window.location.href).then(function (answered) {
        if (!notice.isConnected) {
          return;
        }
        if (answered) {
          offerResume(runId, notice, step);
        } else {
          setTimeout(check, CHECK_EVERY_MS);
        }
      });
    };
    setTimeout(check, CHECK_EVERY_MS);
  }

  document.addEventListener("htmx:sendError", connectionLost);
  document.addEventListener("htmx:responseError", connectionLost);
  document.addEventListener("htmx:timeout", connectionLost);
  setInterval(tick, 100);
})();
