// htmx for pages that swap server-rendered fragments; exposed as window.htmx (nothing else here).
import htmx from "htmx.org";

window.htmx = htmx;
