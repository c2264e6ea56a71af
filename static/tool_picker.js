// The agent form's tool picker, as a person types: the search box (hidden without JavaScript, where the picker's
// groups open by hand) shows only the tools whose name, title or description holds every word typed, opens the
// groups that have one and hides the others; Enter adds the only match instead of saving the form. A static file,
// as the Content-Security-Policy allows no inline script. Listeners sit on the document, so they keep working after
// htmx brings the form back.
(function () {
  "use strict";
  const SEARCH = "#tool-search";

  function reveal() {
    for (const box of document.querySelectorAll("[data-tool-search][hidden]")) {
      box.hidden = false;
    }
  }

  function matches(picker, text) {
    const words = text.toLowerCase().split(/\s+/).filter(Boolean);
    const found = [];
    for (const group of picker.querySelectorAll("[data-picker-group]")) {
      let shown = 0;
      for (const tool of group.querySelectorAll("[data-picker-tool]")) {
        const hit = words.every((word) => tool.dataset.search.includes(word));
        tool.hidden = !hit;
        if (hit) {
          shown += 1;
          found.push(tool);
        }
      }
      group.hidden = words.length > 0 && shown === 0;
      group.open = words.length > 0 && shown > 0;
    }
    const count = picker.querySelector("[data-tool-search-count]");
    if (count) {
      count.textContent = words.length === 0 ? "" : found.length === 1 ? "1 tool matches." : found.length + " tools match.";
    }
    return words.length > 0 ? found : null;
  }

  document.addEventListener("input", (event) => {
    if (event.target.matches(SEARCH)) {
      matches(event.target.closest("#tool-picker"), event.target.value);
    }
  });

  document.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || !event.target.matches(SEARCH)) {
      return;
    }
    event.preventDefault(); // Enter in a field submits the form's first button: Save
    const found = matches(event.target.closest("#tool-picker"), event.target.value);
    if (found && found.length === 1) {
      found[0].querySelector("button").click();
    }
  });

  document.addEventListener("DOMContentLoaded", reveal);
  document.addEventListener("htmx:load", reveal);
})();
