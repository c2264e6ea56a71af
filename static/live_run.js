// The live run page's clock: every element with data-elapsed-ms shows the time since its run started, counted on
// from what the server rendered (a live step replaces the element, and the count goes on from the new value).
// A static file, as the Content-Security-Policy allows no inline script.
(function () {
  "use strict";
  const origins = new WeakMap();

  function tick() {
    const now = performance.now();
    for (const element of document.querySelectorAll("[data-elapsed-ms]")) {
      if (!origins.has(element)) {
        origins.set(element, now - Number(element.dataset.elapsedMs));
      }
      element.textContent = ((now - origins.get(element)) / 1000).toFixed(1) + " s";
    }
  }

  setInterval(tick, 100);
})();
