"""A page whose content a script builds, shaped like mr-tu-bakery's menu.html: category labels and an
empty list that an inline script fills from ./menu.json. Shared by test_web_pagecheck.py (the decision)
and test_crawl_js_built.py (the crawl in Chromium)."""

from __future__ import annotations

MENU_MAIN = """<section class="menu-container"><div class="menu-title">Menu</div>
<div class="menu-categories"><div>All</div><div>Pastry</div><div>Cake</div><div>Bread</div><div>Drinks</div></div>
<div class="menu-content" id="menu-content"></div>
<div class="menu-pagination"><button>Prev</button><span id="page-info">Page 1</span><button>Next</button></div>
</section>"""
MENU_SCRIPT = """<script>
document.addEventListener('DOMContentLoaded', async () => {
  const response = await fetch('./menu.json');
  const items = await response.json();
  const box = document.getElementById('menu-content');
  items.forEach(item => {
    const row = document.createElement('div');
    row.classList.add('menu-item');
    row.innerHTML = `<span class="menu-name">${item.name}</span> <span class="menu-price">${item.price}</span>`;
    box.appendChild(row);
  });
});
</script>"""
