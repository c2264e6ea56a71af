// With the login on, an htmx request whose session has ended gets a 401 (blueprints/auth.py): instead of
// swapping the notice into the page, go to the login page, which comes back here afterwards.
document.addEventListener("htmx:beforeSwap", function (event) {
  var request = event.detail.xhr;
  if (request.status !== 401) {
    return;
  }
  event.detail.shouldSwap = false;
  var login = request.getResponseHeader("X-Login-URL") || "/login";
  window.location.assign(login + "?next=" + encodeURIComponent(window.location.pathname + window.location.search));
});
