// The one piece of the dashboard's own script: a log stream starts with the log's tail
// each time it (re)connects, so the log on the page is emptied as the stream opens.
document.addEventListener("htmx:sseOpen", function (e) {
  if (e.target && e.target.classList.contains("logs")) {
    e.target.replaceChildren();
  }
});
