"""The word lists search reads requests and tools with: data, general English and software
vocabulary, not fitted to a tool catalogue or a query set.

Each list says what it is for; the mechanisms that read them are text.py (stop words,
suffixes, short forms, coordinate parameter names), lexical.py (synonyms, implied words)
and needs.py (request verbs, abbreviations, document kinds).
"""

from __future__ import annotations

__all__ = [
    "ABBREVIATIONS",
    "BARE_FILE_EXTENSIONS",
    "DEPRECATION_MARKS",
    "DISPLAY_VERBS",
    "DOCUMENT_KINDS",
    "DONE_VERBS",
    "EARLIER_WORDS",
    "FOREIGN_WORDS",
    "IMPLIED_WORDS",
    "LATITUDE_NAMES",
    "LONGITUDE_NAMES",
    "NARRATED_ADVERBS",
    "NARRATORS",
    "NEGATION_FILLERS",
    "OUTPUT_VERBS",
    "PAST_FORMS",
    "PHRASAL_VERBS",
    "PREPOSITIONS",
    "RESULT_NOUNS",
    "SHORT_FORMS",
    "STATEMENT_READINGS",
    "STOP_WORDS",
    "SUFFIXES",
    "SYNONYM_GROUPS",
    "VERBS",
    "WISH_WORDS",
]

# Function words: they say nothing of what a tool does, yet in a small catalogue a rare one
# weighs like a topic ("remember a fact about a person" found the one tool whose description
# says "metadata about content"). Pronouns, auxiliaries, conjunctions and the like; not the
# prepositions tools name ("scroll up", "sign out") nor "may" and "us" (a month, a country).
# Nor the modals ("should", "could", "must"): as stop words they narrowed the keyword hits of
# "what recipe should I cook tonight" to the recipe tools, a ranking the blend reads as
# peaked (fusion.py), and the meal recommender, found only by meaning, fell under the
# threshold (bench/NOTES.md). A stop word's synonyms still count for a
# tool's name ("show" means "list": lexical.py's name coverage), not for BM25. Contractions
# typed without their apostrophe ("whats", "dont") are stop words too: stemmed, "whats" was
# "what", a word of whatToEat's name, found first for "whats in config.yaml?".
_STOP_WORDS = """
    a about all also am an and any are as at be because been being but by can did do does
    find for from get give has have he her here him his how i i'd i'm if in into is it its
    just let me my need of on one or our please she show so some such tell than that the
    their them then there these they this those to too use using very want was we were what
    when where which who whom whose will with would you your
    whats hows whos wheres thats dont doesnt didnt cant isnt arent wasnt wont im ive youre
    """
STOP_WORDS = frozenset(_STOP_WORDS.split())

# Words between a negation and the word it negates ("not the logs", "don't merge yet",
# "not as a new message"): articles, determiners and possessives, and "want (to)" / "need" ("I
# don't want to change anything") (text.without_negated).
# Not "whole", "entire", "full": "not the whole file, just its size" negates the wholeness,
# and "file" is what is asked about.
_NEGATION_FILLERS = """
    a an the any its their his her my our your this that these those as to yet even ever
    want need
    """
NEGATION_FILLERS = tuple(_NEGATION_FILLERS.split())

# Verbs that say a step is done, besides the regular "-ed" ones ("got the okta group id, now add
# carol to it", "dataset found, now its details"): irregular past forms and participles, and
# words that say a thing is there (text.without_done_step).
_DONE_VERBS = """
    got gotten found made done built ran run set sent wrote written took taken read saw seen
    put brought bought gave given began begun kept left held paid told drew drawn chose chosen
    shown knew known exists exist ready there
    """
DONE_VERBS = tuple(_DONE_VERBS.split())

# Who a past event is told of ("right after someone edited the app", "the build I started")
# and the adverbs between them and its verb (text.without_narrated). Not "who" ("who blamed
# this line", "who viewed the page" ask for the blame and the views), "what" ("what changed
# between v1 and v2" asks for a diff), "it", "that" or "which".
_NARRATORS = """
    i we you they he she someone somebody nobody anyone anybody everyone everybody
    """
NARRATORS = tuple(_NARRATORS.split())
_NARRATED_ADVERBS = """
    already just last recently never ever still also first once originally accidentally
    """
NARRATED_ADVERBS = tuple(_NARRATED_ADVERBS.split())
# Irregular past forms that are not also the verb's present ("set", "run", "read", "put" are).
_PAST_FORMS = """
    got gotten found made built ran sent wrote written took taken saw seen brought bought gave
    given began begun kept left held paid told drew drawn chose chosen shown knew known broke
    broken went gone came forgot forgotten lost stuck
    """
PAST_FORMS = tuple(_PAST_FORMS.split())

# Suffixes the light stemmer strips (text.stem), the longest first.
SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "es", "ed", "ly", "s")

# Short forms people type for words tools spell out ("list my open PRs" asks for
# list_pull_requests): general software and chat vocabulary, not fitted to a catalogue.
# Forms that tools use as they are ("docs", "config", "info") are left alone.
SHORT_FORMS = {
    "pr": "pull request",
    "prs": "pull requests",
    "repo": "repository",
    "repos": "repositories",
    "db": "database",
    "dbs": "databases",
    "env": "environment",
    "envs": "environments",
    "dir": "directory",
    "dirs": "directories",
    "auth": "authentication",
    "k8s": "kubernetes",
    "msg": "message",
    "msgs": "messages",
    "dm": "direct message",
    "dms": "direct messages",
    "vm": "virtual machine",
    "vms": "virtual machines",
    "img": "image",
    "imgs": "images",
    "pic": "picture",
    "pics": "pictures",
    # shell commands typed as requests ("mkdir reports/2026", "ls ~/projects")
    "mkdir": "make directory",
    "rmdir": "remove directory",
    "ls": "list",
    "rm": "remove delete",
    "subs": "subscriptions",
    "mv": "move",
    "cp": "copy",
    "tz": "timezone",
}

# Verbs said in two words, or in a word tools seldom name, for the verb tool names use ("set
# up a custom domain", "the MFA rule switched on", "take them off the watchers", "upload a
# certificate", "throw away the session", "tick off subtask 31"): the phrase, its object
# between its two words or not, and the verb it means
# (text.phrasal_verbs_read). A phrase that says a state ("the orgs that are set up") is not
# read: not after a form of "be".
PHRASAL_VERBS = {
    "set up": "create",
    "switch on": "activate enable",
    "turn on": "activate enable",
    "switch off": "deactivate disable",
    "turn off": "deactivate disable",
    "take off": "remove",
    "upload": "create",
    "throw away": "delete clear discard",
    "tick off": "complete completion",
    "check off": "complete completion",
}

# Idioms that say a change in words no tool name uses ("the credential has to go", "the url
# should be https://... now", "mark the section as completed", "mark it done"): a pattern of the
# request and the words it means, read as the phrasal verbs are (text.phrasal_verbs_read). "has
# to go" not before a place or a way ("has to go through review", "needs to go live"); "should
# be ..." only with a "now" ("what should be in the config?" asks). "raise/lower/bump X to 14.4"
# read as "update" was tried and dropped: "bump web to 5 replicas" lost its scaler (bench/NOTES.md).
IDIOMS = {
    r"\b(?:has|have|had|needs?)\s+to\s+go\b"
    r"(?!\s+(?:to|through|into|in|via|over|back|out|on|up|down|live|ahead|and)\b)": "delete remove",
    r"\bshould\s+be\b(?:[^.;?!]|\.(?=\S)){1,80}?\bnow\b|\bshould\s+now\s+be\b": "update change",
    r"\bmark(?:s|ed|ing)?\b(?:\s+[\w'\u2019\"-]+){1,8}?\s+(?:as\s+)?"
    r"(?:done|complete|completed|finished|resolved)\b": "update status completion",
}

# A statement of a query language typed as the request ("SELECT count(*) FROM users WHERE
# active = 1", "MATCH (p:Person)-[:KNOWS]->(f) RETURN f.name") asks to run a query of that
# language; its tables, columns and values are values ("users" asks for no user tool). It
# reads as these words (text.py), by its language and the keyword it starts with (Cypher:
# "write" when it creates, merges, sets or deletes anything). General SQL and Cypher.
STATEMENT_READINGS = {
    ("sql", "select"): "read SQL query",
    ("sql", "with"): "read SQL query",
    ("sql", "insert"): "write SQL query",
    ("sql", "update"): "write SQL query",
    ("sql", "delete"): "write SQL query",
    ("sql", "create"): "create table SQL query",
    ("sql", "alter"): "alter table SQL query",
    ("sql", "drop"): "drop table SQL query",
    ("cypher", "read"): "read Cypher query",
    ("cypher", "write"): "write Cypher query",
}

# Words users say for the verbs and nouns tool names use (general English, not tuned to a corpus).
SYNONYM_GROUPS = (
    "create make new add generate build open start",
    "delete remove drop erase destroy wipe purge nuke forget",
    "list show all enumerate browse",
    "get fetch retrieve read load obtain look grab",
    "search find query lookup locate seek",
    "update edit change modify set rename",
    "send post publish message notify email",
    "run execute trigger launch invoke start",
    "stop cancel kill terminate end abort",
    "picture image photo screenshot snapshot",
    "file document doc",
    "folder directory dir",
    "weather forecast temperature rain",
    "price quote cost value",
    "issue ticket bug",
    "repo repository project",
    "chart graph plot diagram visualization",
    "map location place address geocode",
    "translate convert transform",
    "download save export",
    "write save store",
    "upload attach",
    "comment reply note",
    "user person member people account",
    "time date clock",
    "current now present latest live newest",
    "email mail inbox",
)

# Questions that ask about the present without saying so ("what time is it in Tokyo" asks
# for the current time), and several things done in one call ("file these five tickets in one
# go", "read a.json and b.json at once" ask for the batch or bulk tool, or the one that takes
# multiple): a pattern of the lowered request, and the word it implies (it joins the query's
# synonyms).
_IN_ONE_CALL = (
    r"\bin\s+one\s+go\b|\b(?:all\s+)?at\s+once\b|\bin\s+bulk\b|\bin\s+(?:a|one)\s+batch\b"
    r"|\bin\s+(?:a\s+single|one)\s+(?:call|request|step|shot)\b"
)
# A listing of the things' names and ids only ("just names and ids", "ids and names only"):
# the "lite" lister where a catalogue has one beside the full one.
_NAMES_ONLY = (
    r"\b(?:just|only)\s+(?:the\s+)?(?:names?|ids?)(?:\s+and\s+(?:names?|ids?))?\b"
    r"|\b(?:names?|ids?)(?:\s+and\s+(?:names?|ids?))?,?\s+only\b"
)
IMPLIED_WORDS = (
    (r"\bwhat\s+(?:time|day|date)\s+is\s+it\b|\bright\s+now\b|\btoday\b", "current"),
    (_IN_ONE_CALL, "bulk"),
    (_IN_ONE_CALL, "batch"),
    (_IN_ONE_CALL, "multiple"),
    (_NAMES_ONLY, "lite"),
)

# How a description says its tool is kept only for old clients (ranked after the tools that
# do the same: ranking.py): "DEPRECATED: Use read_text_file instead." (the filesystem
# server), Sphinx's ".. deprecated::", "[Deprecated]", "This tool is deprecated". Not the
# word alone: "Check if packages are deprecated" is a tool of its own.
DEPRECATION_MARKS = (
    r"\bDEPRECATED\b"
    r"|(?i:^\W*deprecated\b|\.\.\s*deprecated::|\bdeprecated\s*[:\])]"
    r"|\b(?:tool|endpoint|function|method|command)\s+(?:is|has\s+been)\s+deprecated\b)"
)

# Parameter names that make a tool one that takes coordinates (both kinds needed).
LATITUDE_NAMES = frozenset(["lat", "latitude"])
LONGITUDE_NAMES = frozenset(["lon", "lng", "long", "longitude"])

# Verbs that start a request, in the imperative (the base form: "sorted by size" and
# "including their sizes" describe the request before them, they ask for nothing new).
_VERBS = """
acknowledge activate add adjust aggregate analyse analyze annotate append apply approve archive
arrange ask assign attach audit back backup ban block book bookmark browse build buy calculate
call cancel capture change charge check clean clear click clone close collect combine comment
commit compare compile compose compress compute configure confirm connect convert copy count
crawl create crop deactivate debug decode delete deny deploy deposit describe design detect
determine diff disable discard disconnect dismiss download draft drag draw drop duplicate edit
email embed enable encode escalate estimate evaluate examine execute expand explain explore
export expose extract fetch fill filter find fix follow forecast fork format forward gather generate
geocode get give go grab grant graph hide highlight hover import include inform insert inspect
install invite invoice join keep kill label launch leave link list load locate lock log look make
manage map mark measure mention merge message migrate monitor mount move mute navigate notify
obtain open optimize order organize outline paste pause pay pick pin ping plan play plot post
predict prepare present press preview print process produce provide provision publish pull
purchase push put query rate read rebase reboot receive recommend record redirect redo refresh
refund register reject reload remind remove rename render renew reopen reply report request
rerun reserve reset resize resolve restart restore resume retrieve retry return retweet revert
review revoke rewrite rollback rotate run save scale scan schedule scrape scroll search select
sell send set share show sign silence snooze sort split squash star start stop store submit
subscribe suggest summarise summarize switch sync tag take tell terminate throw toggle track
trade transcribe transfer transform translate trigger turn tweet unarchive unassign unblock
underline undo unhide uninstall unlock unmount unmute unpin unsubscribe update upgrade upload
upvote validate verify view visit visualize vote wait watch withdraw write zip
"""
VERBS = frozenset(_VERBS.split())

# Verbs that ask only to see a thing: said of one thing named by its identifier ("rule 8812,
# show it") they ask for that thing, as no verb does (text.named_one).
DISPLAY_VERBS = frozenset(["show", "view", "display", "see"])

# Prepositions that make the thing after them a modifier of the one asked for ("a provisioning
# key for connector group "fra"", "link PLAT-88 to ...": text.named_one).
PREPOSITIONS = frozenset(
    ["for", "of", "in", "on", "to", "from", "with", "by", "about", "into", "at"]
)

# Where a value was found, said beside it: an earlier call's output ("the PRA portal from the
# earlier list output", "the address in the previous step's output", "the id from the last
# result"). The words say what came before, not what is asked (text.without_provenance): a
# word of EARLIER_WORDS, then at most three words, then one of RESULT_NOUNS.
EARLIER_WORDS = ("earlier", "previous", "prior", "preceding", "above", "last")
RESULT_NOUNS = ("output", "outputs", "result", "results", "response", "responses", "call")

# Words that ask a thing to change without a verb of the list ("rule 12 should alert instead",
# "the group must hold the new IP"): a modal before the change (text.named_one, changes_one).
WISH_WORDS = frozenset(["should", "must", "shall", "needs", "ought"])

# Verbs that put something into a file named after them ("save it to /root/cv.md", "generate
# a report in report.md", "a page saved at /srv/ai.html"), in every inflection.
_OUTPUT_VERBS = """
save saves saved saving write writes writing written wrote export exports exported exporting
store stores stored storing output outputs outputted outputting create creates created creating
generate generates generated generating draft drafts drafted drafting make makes making made
produce produces produced producing dump dumps dumped dumping put puts putting compose composes
composed composing prepare prepares prepared preparing record records recorded recording append
appends appended appending
"""
OUTPUT_VERBS = tuple(_OUTPUT_VERBS.split())

# The extensions of a file named without a folder ("save it as notes.md"): common documents,
# data, images and archives, for "next.js", "example.com" or "e.g." name no file.
_BARE_FILE_EXTENSIONS = """
md markdown txt csv tsv json jsonl yaml yml xml html htm pdf doc docx xls xlsx ppt pptx odt ods
png jpg jpeg gif svg webp mp3 wav mp4 zip log ics
"""
BARE_FILE_EXTENSIONS = tuple(_BARE_FILE_EXTENSIONS.split())

# Abbreviations whose stop ends no sentence.
ABBREVIATIONS = frozenset(["e.g.", "i.e.", "etc.", "vs.", "approx.", "no.", "mr.", "ms.", "dr."])

# The kind of document a file's extension names, in the words its tools use: a ".pptx" is
# written by a presentation tool and a ".pdf" read by a PDF reader, not a plain file writer
# or reader. Other files are plain files.
DOCUMENT_KINDS = {
    "ppt": "presentation",
    "pptx": "presentation",
    "odp": "presentation",
    "doc": "word document",
    "docx": "word document",
    "odt": "word document",
    "xls": "excel spreadsheet",
    "xlsx": "excel spreadsheet",
    "ods": "spreadsheet",
    "pdf": "pdf",
    **dict.fromkeys(("mp3", "wav", "flac", "ogg", "m4a", "aac"), "audio"),
    **dict.fromkeys(("png", "jpg", "jpeg", "gif", "webp", "bmp", "tiff"), "image"),
    **dict.fromkeys(("mp4", "mov", "avi", "mkv", "webm"), "video"),
}


# The words tool names use most (the corpus's commonest name words: get, list, create, delete,
# update, search, add, send, the user, group, page, file, issue, message, chart, price, ...) as
# requests say them in Spanish, German, French, Portuguese, Chinese and Japanese: an agent
# passes its user's words through, and neither the keyword index nor the default model
# (English MiniLM) reads them.
# English -> the other languages' words, verbs in the forms a request uses (imperative,
# infinitive). Not a word that is English too ("page", "message", "article", "route") nor an
# ambiguous one ("actions", "lies", "lee"). Latin-script words match whole; Han and kana words
# anywhere in a run (those scripts have no spaces).
_FOREIGN = {
    "create": "crie criar crea crear créame erstelle erstellen anlegen crée créer 创建 新建 作成",
    "list": "lista listar enumera liste lister auflisten 列出 一覧",
    "show": "mostre muestra muéstrame mostrar zeige zeig anzeigen affiche afficher montre montrer "
    "显示 查看 表示 見せて",
    "delete": "apague apagar exclua excluir remova borra borrar elimina eliminar lösche löschen "
    "entferne supprime supprimer efface 删除 削除",
    "search": "procure procurar pesquise pesquisar busca buscar suche suchen finde cherche "
    "chercher recherche trouve 搜索 查找 検索",
    "get": "obtenha obter obtén obtener holen récupère récupérer 获取 取得",
    "update": "atualize atualizar actualiza actualizar aktualisiere aktualisieren ändere 更新",
    "add": "adicione adicionar agrega agregar añade añadir füge hinzufügen ajoute ajouter 添加 追加",
    "read": "leia leer lesen lire 读取 読んで 読み",
    "write": "escreva escrever escribe escribir schreibe schreiben écris écrire 写入 書いて",
    "send": "envie mande mandar envía enviar manda sende senden schicke schick envoie envoyer 发送 "
    "送信 送って",
    "download": "baixe baixar descarga descargar télécharge télécharger 下载 ダウンロード",
    "upload": "hochladen 上传 アップロード",
    "merge": "mescle mesclar fusiona fusionar fusionne fusionner 合并 マージ",
    "move": "mova mueve mover verschiebe verschieben déplace déplacer 移动 移動",
    "copy": "copia copiar kopiere kopieren copie copier 复制 コピー",
    "run": "executar ejecuta ejecutar führe ausführen exécute exécuter 运行 执行 実行",
    "user": "usuário usuários usuario usuarios benutzer nutzer utilisateur utilisateurs 用户 ユーザー",
    "group": "grupo grupos gruppe gruppen groupe groupes 群组 グループ",
    "file": "arquivo arquivos archivo fichero datei dateien fichier fichiers 文件 ファイル",
    "issue": "incidencia vorgang 问题 課題",
    "comment": "comentário comentario kommentar commentaire 评论 コメント",
    "project": "projeto proyecto projekt projet 项目 プロジェクト",
    "repository": "repositório repositorio dépôt 仓库 リポジトリ",
    "branch": "rama zweig branche 分支 ブランチ",
    "commit": "confirmación 提交记录 コミット",
    "history": "histórico historial verlauf historique 历史 履歴",
    "message": "mensagem mensagens mensaje mensajes nachricht nachrichten 消息 メッセージ",
    "channel": "canal kanal 频道 チャンネル",
    "email": "correo courriel 邮件 メール",
    "table": "tabela tabla tabelle 表格 テーブル",
    "chart": "gráfico diagramm graphique 图表 グラフ",
    "slide": "diapositiva folie diapositive 幻灯片 スライド",
    "presentation": "apresentação presentación präsentation 演示文稿 プレゼンテーション",
    "document": "documento dokument 文档 ドキュメント",
    "image": "imagem imagen bild 图片 画像",
    "screenshot": "bildschirmfoto 截图 スクリーンショット",
    "price": "preço precio preis prix 价格 価格 値段",
    "stock": "aktie aktien 股票 株価",
    "weather": "tiempo wetter météo 天气 天気",
    "time": "hora uhrzeit heure 时间 時間 時刻",
    "news": "notícias noticias nouvelles 新闻 ニュース",
    "log": "registro protokoll 日志 ログ",
    "event": "evento ereignis événement 事件 イベント",
    "paper": "论文 論文",
    "pull request": "プルリクエスト",
    "invoice": "fatura factura rechnung facture 发票 請求書",
    "customer": "cliente kunde 客户 顧客",
    "payment": "pagamento pago zahlung paiement 付款 支払い",
    "link": "enlace lien 链接 リンク",
    "task": "tarefa tarea aufgabe tâche 任务 タスク",
    "distance": "distância distancia entfernung 距离 距離",
    "current": "ahora jetzt maintenant agora 现在 当前 現在",
    "text": "texto texte 文本 テキスト",
    "details": "detalles detalle einzelheiten détails detalhes 详情 詳細",
    "status": "estado zustand statut 状态 ステータス",
    "rule": "regla reglas regel regeln règle règles regra regras 规则 ルール",
    "policy": "política políticas richtlinie richtlinien politique 策略 ポリシー",
    "set": "establece establecer setze setzen définis définir defina definir 设置 設定",
    "replace": "reemplaza reemplazar ersetze ersetzen remplace remplacer substitua substituir "
    "替换 置換",
    "generate": "genera generar generiere generieren génère générer gere gerar 生成",
    "account": "cuenta konto compte conta 账户 アカウント",
    "map": "mapa karte 地图 地図",
}
FOREIGN_WORDS = {word: english for english, words in _FOREIGN.items() for word in words.split()}
