"""Seeded generator of long two-person conversations with questions whose evidence is known.

The output is training data for a learning-to-rank model of memory search (rank the stored turns
of a conversation for a question), in exactly LoCoMo's schema, so one loader reads both: a sample
is ``{"sample_id", "conversation": {"speaker_a", "speaker_b", "session_N": [turns],
"session_N_date_time"}, "qa": [{"question", "answer", "evidence", "category"}]}`` with a turn
``{"speaker", "dia_id": "D<session>:<turn>", "text"}`` and now and then a ``blip_caption`` when
someone shares a photo. Categories follow LoCoMo: 1 multi-hop, 2 temporal, 3 open-domain
(an inference from stated facts), 4 single-hop.

How a conversation comes about, one seeded ``random.Random`` per (seed, index):

* ``persona`` draws two people (names of many origins, age, city and home, job, relatives and
  pets with names, hobbies, sometimes one in common, traits, a goal, maybe a worry, and a way of
  typing), each thing an entity with its own facts;
* ``dates`` spreads 15 to 30 sessions irregularly over 6 to 18 months;
* ``plan`` puts stories on that timeline: persona topics early, then dozens of life events (a
  class, a pet, a trip, an interview and an offer, an injury and the recovery, a move...) told
  over one or more sessions, each stage on a day some time before the session that tells it;
  events use, add and replace entities, so state changes (a new city, a new job, a new pet);
* ``session`` writes each session: a greeting, the stories' beats (announcement, the friend's
  reaction and question, details, later "how's the knee?"), small talk that states nothing but
  shares the stories' vocabulary, and a goodbye, alternating speakers, 12 to 35 turns of 5 to 45
  words;
* ``questions`` derives the questions from the timeline, never from the text: every beat
  declares the facts it states, so a question's evidence is exactly the turns stating its facts;
  ``select`` keeps about 45% single-hop, 20% temporal, 20% multi-hop and 15% open-domain.

All text is data (``data/``, described in ``catalog.py``): persona options, story beats with many
wordings each, question wordings, small talk, time phrases. The modules only draw from it. To
write a file:

    .venv/bin/python -m benchmarks.conversations --seed 1 --count 40 --out conversations.json
"""

from __future__ import annotations

from .generate import generate_conversations

__all__ = ["generate_conversations"]
