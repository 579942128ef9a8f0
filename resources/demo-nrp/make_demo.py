"""Build the NRP demo collection (original text written for examflow): five consumer-health topics,
20 judged web-style documents each (relevance and readability, readability -1 = cannot judge),
answers of three "LLMs" × two prompts × three samples, and an expert's ranking for three topics.

    python resources/demo-nrp/make_demo.py     # rewrites the files beside this script

Documents and answers are assembled from hand-written sentences: correct key facts, plain or
in jargon, vague filler and off-topic text. Relevance follows the key facts a document carries,
readability its jargon. The LLMs differ by design: `medlm-large` answers with key facts,
`chat-small` with fewer, `echo-tiny` with filler and text about other topics. The fixed seed makes every
file the same on every run.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent

TOPICS = {
    "h1": {
        "query": "can vitamin c prevent the common cold",
        "facts": [
            "Large reviews of clinical trials found that taking vitamin C every day does not prevent colds for most people.",
            "Taking vitamin C regularly may shorten a cold a little, by about eight percent in adults.",
            "Starting vitamin C only after the first symptoms has not been shown to help.",
            "People under heavy physical stress, such as marathon runners, caught fewer colds when they took vitamin C.",
            "Doses above two grams a day can upset the stomach and cause diarrhoea.",
            "Oranges, peppers and broccoli give most adults all the vitamin C they need.",
        ],
        "jargon": [
            "Meta-analyses of randomised placebo-controlled trials show no significant reduction in upper respiratory tract infection incidence with prophylactic ascorbate in the general population.",
            "Prophylactic ascorbic acid was associated with a modest reduction in symptomatic duration in adult cohorts.",
            "Therapeutic initiation of ascorbate after symptom onset demonstrated no consistent efficacy.",
        ],
        "vague": [
            "Vitamin C is a popular supplement that many people buy in winter.",
            "Colds are caused by viruses and usually pass within a week or two.",
            "There are many opinions online about vitamins and the immune system.",
            "Some people swear by home remedies when they feel a cold coming on.",
        ],
    },
    "h2": {
        "query": "is it safe to take ibuprofen with high blood pressure",
        "facts": [
            "Ibuprofen can raise blood pressure, especially when it is taken every day for weeks.",
            "It can also weaken the effect of some blood pressure medicines, such as ACE inhibitors and diuretics.",
            "For people with high blood pressure, paracetamol is usually the safer choice for occasional pain.",
            "A short course at the lowest dose is less risky than long-term use.",
            "People with heart or kidney disease should ask a doctor before taking ibuprofen at all.",
            "Checking blood pressure at home while taking ibuprofen shows whether it is rising.",
        ],
        "jargon": [
            "Non-steroidal anti-inflammatory drugs induce sodium retention and attenuate prostaglandin-mediated vasodilation, elevating systemic arterial pressure.",
            "NSAIDs antagonise the antihypertensive efficacy of angiotensin-converting enzyme inhibitors and thiazide diuretics.",
            "Acetaminophen is generally preferred for analgesia in hypertensive patients owing to its neutral haemodynamic profile.",
        ],
        "vague": [
            "Ibuprofen is one of the most common painkillers in the world.",
            "High blood pressure affects many adults and often has no symptoms.",
            "Every medicine has side effects that you should know about.",
            "Pharmacies sell many different brands of pain relief.",
        ],
    },
    "h3": {
        "query": "does drinking coffee cause dehydration",
        "facts": [
            "In people who drink coffee regularly, normal amounts of coffee do not cause dehydration.",
            "Caffeine has a mild diuretic effect, but the water in the coffee more than makes up for it.",
            "Studies found that up to four cups a day hydrate about as well as the same amount of water.",
            "The body gets used to caffeine within a few days, which weakens its effect on urine.",
            "Very large doses of caffeine, above about five hundred milligrams, can increase urine output.",
            "Coffee counts towards daily fluid intake for most healthy adults.",
        ],
        "jargon": [
            "Habitual caffeine consumers develop tolerance to its natriuretic and diuretic properties.",
            "Moderate coffee intake produced hydration indices comparable to water in controlled crossover trials.",
            "Acute high-dose caffeine administration transiently elevates urine volume via adenosine receptor antagonism.",
        ],
        "vague": [
            "Coffee is one of the most popular drinks in the world.",
            "Staying hydrated is important for good health.",
            "Many people drink coffee in the morning to wake up.",
            "There are many myths about food and drink.",
        ],
    },
    "h4": {
        "query": "how long should antibiotics be taken for strep throat",
        "facts": [
            "Strep throat is usually treated with penicillin or amoxicillin for ten days.",
            "Finishing the full course lowers the risk of rheumatic fever, a rare but serious complication.",
            "Most people feel better within one to three days of starting antibiotics.",
            "People are no longer contagious after about twenty-four hours on antibiotics.",
            "Those allergic to penicillin are given other antibiotics, such as azithromycin for five days.",
            "A quick swab test confirms strep before antibiotics are started, since most sore throats are viral.",
        ],
        "jargon": [
            "Group A streptococcal pharyngitis warrants a ten-day regimen of oral penicillin V or amoxicillin.",
            "Completion of therapy reduces the incidence of acute rheumatic fever and suppurative sequelae.",
            "Macrolide alternatives are indicated in patients with type I hypersensitivity to beta-lactams.",
        ],
        "vague": [
            "Sore throats are very common, especially in children.",
            "Antibiotics are important medicines that should be used carefully.",
            "Drinking warm liquids can make a sore throat feel better.",
            "Doctors see many patients with throat problems every winter.",
        ],
    },
    "h5": {
        "query": "can you get the flu from the flu shot",
        "facts": [
            "The flu shot cannot give you the flu, because it contains inactivated virus or only a single viral protein.",
            "A sore arm, mild fever or aches for a day or two are common reactions, not the flu itself.",
            "The vaccine takes about two weeks to protect, so people can catch flu just after the shot.",
            "Other viruses that circulate in winter cause colds that people mistake for the flu.",
            "The nasal spray vaccine contains a weakened live virus, which can cause mild cold symptoms.",
            "Yearly vaccination is recommended because the flu virus changes from season to season.",
        ],
        "jargon": [
            "Inactivated and recombinant influenza vaccines are non-replicating and cannot cause influenza infection.",
            "Transient reactogenicity, including injection-site pain and low-grade pyrexia, reflects innate immune activation.",
            "Seroprotective antibody titres develop approximately fourteen days after immunisation.",
        ],
        "vague": [
            "The flu is a common illness in winter.",
            "Many people get vaccinated every year at pharmacies.",
            "Vaccines are an important part of public health.",
            "Some people feel unwell after going to the doctor.",
        ],
    },
}

LLMS = {
    # llm: {prompt: (key facts, vague sentences, sentences about another topic)}
    "medlm-large": {"expert": (4, 0, 0), "plain": (3, 1, 0)},
    "chat-small": {"expert": (2, 1, 0), "plain": (1, 2, 0)},
    "echo-tiny": {"expert": (0, 2, 1), "plain": (0, 1, 2)},
}
SAMPLES = 3
EMPTY = ("echo-tiny", "plain", "2", "h3")  # an answer that came back empty
MISSING = ("echo-tiny", "expert", "1", "h5")  # an answer that never came back


def documents(rng: random.Random, topic: str, spec: dict) -> list[tuple[str, str, int, int]]:
    """(doc id, text, relevance 0-2, readability 0-2 or -1 = cannot judge)."""
    others = [fact for name, other in TOPICS.items() if name != topic for fact in other["facts"]]
    kinds = [("good", 2, 2)] * 6 + [("technical", 2, 0)] * 4 + [("partial", 1, 2)] * 4 + [("vague", 0, 1)] * 4
    kinds += [("off-topic", 0, 1), ("off-topic", 0, -1)]
    docs = []
    for number, (kind, relevance, readability) in enumerate(kinds, 1):
        sentences = {
            "good": rng.sample(spec["facts"], rng.randint(3, 4)),
            "technical": rng.sample(spec["jargon"], 3) + rng.sample(spec["facts"], 1),
            "partial": rng.sample(spec["facts"], 1) + rng.sample(spec["vague"], 2),
            "vague": rng.sample(spec["vague"], 3),
            "off-topic": rng.sample(others, 3),
        }[kind]
        rng.shuffle(sentences)
        docs.append((f"{topic}-d{number:02d}", " ".join(sentences), relevance, readability))
    return docs


def answer(rng: random.Random, topic: str, facts: int, vague: int, offtopic: int) -> str:
    spec = TOPICS[topic]
    others = [fact for name, other in TOPICS.items() if name != topic for fact in other["facts"]]
    sentences = rng.sample(spec["facts"], facts) + rng.sample(spec["vague"], vague) + rng.sample(others, offtopic)
    rng.shuffle(sentences)
    return " ".join(sentences)


def main() -> None:
    rng = random.Random(2025)
    queries, corpus, relevance, readability, answers = [], [], [], [], []
    for topic, spec in TOPICS.items():
        queries.append(f"{topic}\t{spec['query']}\n")
        for doc_id, text, rel, read in documents(rng, topic, spec):
            corpus.append(f"{doc_id}\t{text}\n")
            relevance.append(f"{topic} 0 {doc_id} {rel}\n")
            readability.append(f"{topic} 0 {doc_id} {read}\n")
        for llm, prompts in LLMS.items():
            for prompt, shape in prompts.items():
                for sample in map(str, range(SAMPLES)):
                    key = (llm, prompt, sample, topic)
                    if key == MISSING:
                        continue
                    text = "" if key == EMPTY else answer(rng, topic, *shape)
                    record = {"llm": llm, "prompt": prompt, "sample": int(sample), "query_id": topic, "text": text}
                    answers.append(json.dumps(record) + "\n")
    (HERE / "queries.tsv").write_text("".join(queries))
    (HERE / "documents.tsv").write_text("".join(corpus))
    (HERE / "relevance.qrels").write_text("".join(relevance))
    (HERE / "readability.qrels").write_text("".join(readability))
    (HERE / "answers.jsonl").write_text("".join(answers))
    # The expert (a person, in the paper a medical doctor) ranks a few items per topic, best first.
    expert = {
        topic: ["medlm-large/expert/0", f"{topic}-d01", "chat-small/expert/0", f"{topic}-d11", "echo-tiny/expert/0"]
        for topic in ("h1", "h2", "h4")
    }
    (HERE / "expert.json").write_text(json.dumps(expert, indent=1) + "\n")


if __name__ == "__main__":
    main()
